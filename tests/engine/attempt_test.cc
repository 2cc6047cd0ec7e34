// The attempt lifecycle without a store: a table of what happened to an
// attempt and what it makes of the attempt and its run.
#include "engine/attempt.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "cronledger/schedule.h"

// The table's rows name only what differs from the defaults (designated
// initializers); GCC warns about every member left to its default.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace cronledger::engine {
namespace {

using ledger::EndClass;
using ledger::RunState;
using ledger::StepStatus;
using std::chrono::milliseconds;
using std::chrono::seconds;

store::Instant At(const char* t) {
  return std::chrono::time_point_cast<milliseconds>(*ParseRfc3339(t));
}

const store::Instant kBudgetStart = At("2026-11-05T09:00:00Z");
const store::Instant kNow = At("2026-11-05T09:01:00Z");
// With the job's jitter of 0.2, a sample of 0.25 makes the backoff 0.9 of
// its base: 27 s after the first attempt, 54 s after the second.
constexpr double kJitter = 0.25;

// extract (idempotent) -> load (not) -> notify (idempotent).
config::JobConfig Job() {
  config::JobConfig job;
  job.name = "billing";
  for (const auto& [name, idempotent] : std::vector<std::pair<std::string, bool>>{
           {"extract", true}, {"load", false}, {"notify", true}}) {
    config::StepConfig step;
    step.name = name;
    step.idempotent = idempotent;
    job.steps.push_back(step);
  }
  job.retry.max_attempts = 3;
  job.retry.initial_backoff = seconds{30};
  job.retry.multiplier = 2.0;
  job.retry.max_backoff = seconds{600};
  job.retry.jitter = 0.2;
  job.retry.max_retry_duration = seconds{3600};
  job.fail_exit_codes = {3};
  return job;
}

// A claim at `budget_attempts` with every step before `at` succeeded and
// `at` running (the claim started it).
store::ClaimedRun Claim(int budget_attempts, std::size_t at) {
  store::ClaimedRun c;
  c.run.id = 7;
  c.run.job = "billing";
  c.run.partition = "kr";
  c.run.period = "2026-11-05";
  c.run.business_date = "2026-11-05";
  c.run.scheduled_at = std::chrono::floor<seconds>(kBudgetStart);
  c.attempt = budget_attempts;
  c.token = 41;
  c.budget_attempts = budget_attempts;
  c.budget_started_at = kBudgetStart;
  const char* names[] = {"extract", "load", "notify"};
  for (std::size_t i = 0; i < 3; ++i) {
    c.steps.push_back({names[i], i < at    ? StepStatus::kSucceeded
                                 : i == at ? StepStatus::kRunning
                                           : StepStatus::kPending});
  }
  return c;
}

exec::StepOutcome Exited(int status) {
  exec::StepOutcome o;
  o.end = exec::StepEnd::kExited;
  o.exit_status = status;
  return o;
}

exec::StepOutcome Ended(exec::StepEnd end) {
  exec::StepOutcome o;
  o.end = end;
  return o;
}

// Who decides the attempt's end in a row.
enum class View {
  kWorker,  // the step ran and ended (dispatcher, external worker's report)
  kReaper,  // the lease lapsed with `step` running (none: between steps)
  kDrain,   // the node's drain cancelled `step` (none: before it started)
};

struct Row {
  const char* what;
  View view = View::kWorker;
  int budget_attempts = 1;
  std::optional<std::size_t> step;  // the step that ended
  exec::StepOutcome outcome;
  // Expected:
  std::optional<std::size_t> next;          // the attempt goes on at this step...
  EndClass end = EndClass::kSucceeded;      // ...or ends with this class
  RunState run = RunState::kSucceeded;      // and the run becomes this
  std::optional<milliseconds> retry_after;  // after this backoff from now
  bool outside_budget = false;
};

// What the lifecycle made of a row.
struct Decided {
  std::optional<std::size_t> next;
  std::optional<store::FinishParams> finish;
  std::optional<StepStatus> step_result;
};

Decided Decide(const config::JobConfig& job, const Row& row) {
  Decided d;
  const std::size_t at = row.step.value_or(0);
  Attempt attempt = Attempt::FromClaim(job, Claim(row.budget_attempts, at), "n1", "/logs/7.log");
  const EndOfStep end = EndOfStep::Of(row.outcome, job);
  switch (row.view) {
    case View::kWorker: {
      int samples = 0;
      Attempt::AfterStep after = attempt.StepEnded(*row.step, end, kNow, [&] {
        ++samples;
        return kJitter;
      });
      d.step_result = after.result.state;
      EXPECT_EQ(after.result.step, job.steps[*row.step].name) << row.what;
      d.next = after.next;
      d.finish = after.finish;
      // The end after the last step, as the dispatcher writes it.
      if (!after.finish && !after.next) d.finish = attempt.End(row.step, end, kNow, kJitter);
      EXPECT_EQ(samples, after.finish ? 1 : 0) << row.what << ": jitter drawn only for an end";
      break;
    }
    case View::kReaper: {
      store::ExpiredLease lease;
      lease.run.id = 7;
      lease.token = 41;
      lease.node = "n1";
      lease.running_step = row.step ? job.steps[*row.step].name : "";
      lease.budget_attempts = row.budget_attempts;
      lease.budget_started_at = kBudgetStart;
      d.finish = Attempt::LeaseExpired(&job, lease, kNow, kJitter);
      EXPECT_EQ(d.finish->actor, "reaper") << row.what;
      EXPECT_TRUE(d.finish->only_if_lease_expired) << row.what;
      break;
    }
    case View::kDrain:
      // Before it started nothing ran: no step's end to record.
      d.finish = attempt.ReleasedAtShutdown(row.step, row.step ? end : EndOfStep{}, kNow,
                                            "released at shutdown");
      break;
  }
  return d;
}

TEST(AttemptLifecycle, DecidesEachEndAsTheTableSays) {
  const config::JobConfig job = Job();
  const std::vector<Row> rows = {
      {.what = "success of the last step", .step = 2, .outcome = Exited(0)},
      {.what = "success of a middle step: the next step",
       .step = 0,
       .outcome = Exited(0),
       .next = 1},
      {.what = "retryable failure within the budget",
       .step = 0,
       .outcome = Exited(1),
       .end = EndClass::kRetryable,
       .run = RunState::kPending,
       .retry_after = seconds{27}},
      {.what = "EX_TEMPFAIL on the second attempt: a longer backoff",
       .budget_attempts = 2,
       .step = 0,
       .outcome = Exited(75),
       .end = EndClass::kRetryable,
       .run = RunState::kPending,
       .retry_after = seconds{54}},
      {.what = "retryable failure with the budget exhausted",
       .budget_attempts = 3,
       .step = 0,
       .outcome = Exited(1),
       .end = EndClass::kRetryable,
       .run = RunState::kFailed},
      {.what = "timeout of an idempotent step: retried",
       .step = 0,
       .outcome = Ended(exec::StepEnd::kTimeout),
       .end = EndClass::kTimeout,
       .run = RunState::kPending,
       .retry_after = seconds{27}},
      {.what = "timeout of a step that is not idempotent: unknown",
       .step = 1,
       .outcome = Ended(exec::StepEnd::kTimeout),
       .end = EndClass::kTimeout,
       .run = RunState::kUnknown},
      {.what = "killed by a signal nobody here sent, not idempotent: unknown",
       .step = 1,
       .outcome = Ended(exec::StepEnd::kSignal),
       .end = EndClass::kSignal,
       .run = RunState::kUnknown},
      {.what = "non-retryable exit code (EX_DATAERR)",
       .step = 0,
       .outcome = Exited(65),
       .end = EndClass::kPermanent,
       .run = RunState::kFailed},
      {.what = "an exit code the job lists in fail_exit_codes",
       .step = 2,
       .outcome = Exited(3),
       .end = EndClass::kPermanent,
       .run = RunState::kFailed},
      {.what = "a step that could not start",
       .step = 0,
       .outcome = Ended(exec::StepEnd::kSpawnFailed),
       .end = EndClass::kSpawnFailed,
       .run = RunState::kFailed},
      {.what = "lapsed lease of an idempotent step (reaper)",
       .view = View::kReaper,
       .step = 2,
       .end = EndClass::kLeaseExpired,
       .run = RunState::kPending,
       .retry_after = seconds{27}},
      {.what = "lapsed lease of a step that is not idempotent (reaper): unknown",
       .view = View::kReaper,
       .step = 1,
       .end = EndClass::kLeaseExpired,
       .run = RunState::kUnknown},
      {.what = "lapsed lease between steps (reaper): retried",
       .view = View::kReaper,
       .end = EndClass::kLeaseExpired,
       .run = RunState::kPending,
       .retry_after = seconds{27}},
      {.what = "lapsed lease with the budget exhausted (reaper)",
       .view = View::kReaper,
       .budget_attempts = 3,
       .step = 0,
       .end = EndClass::kLeaseExpired,
       .run = RunState::kFailed},
      {.what = "cancelled by the drain: released at once",
       .view = View::kDrain,
       .step = 0,
       .outcome = Ended(exec::StepEnd::kCancelled),
       .end = EndClass::kSignal,
       .run = RunState::kPending,
       .retry_after = milliseconds{0}},
      {.what = "claimed ahead, released by the drain before it started",
       .view = View::kDrain,
       .end = EndClass::kSignal,
       .run = RunState::kPending,
       .retry_after = milliseconds{0},
       .outside_budget = true},
  };
  for (const Row& row : rows) {
    SCOPED_TRACE(row.what);
    const Decided d = Decide(job, row);
    if (row.view == View::kWorker) {
      EXPECT_EQ(d.step_result,
                row.end == EndClass::kSucceeded ? StepStatus::kSucceeded : StepStatus::kFailed);
    }
    EXPECT_EQ(d.next, row.next);
    if (row.next) {
      EXPECT_FALSE(d.finish.has_value()) << "the attempt goes on";
      continue;
    }
    ASSERT_TRUE(d.finish.has_value());
    const store::FinishParams& f = *d.finish;
    EXPECT_EQ(f.end_class, row.end) << ledger::Name(f.end_class);
    EXPECT_EQ(f.decision.state, row.run)
        << ledger::Name(f.decision.state) << ": " << f.decision.reason;
    if (row.retry_after) {
      ASSERT_TRUE(f.decision.next_attempt_at.has_value());
      EXPECT_EQ(*f.decision.next_attempt_at - kNow, *row.retry_after);
    } else {
      EXPECT_FALSE(f.decision.next_attempt_at.has_value());
    }
    EXPECT_EQ(f.outside_budget, row.outside_budget);
    EXPECT_EQ(f.run_id, 7);
    EXPECT_EQ(f.token, 41);
    EXPECT_EQ(f.node, "n1");
    EXPECT_EQ(f.now, kNow);
    EXPECT_EQ(f.step, row.step ? job.steps[*row.step].name : "");
    if (row.outcome.end == exec::StepEnd::kExited && row.view == View::kWorker) {
      EXPECT_EQ(f.exit_status, row.outcome.exit_status);
    } else {
      EXPECT_FALSE(f.exit_status.has_value());
    }
  }
}

TEST(AttemptLifecycle, AnEffectInDoubtEndsTheRunUnknownEvenForAnIdempotentStep) {
  const config::JobConfig job = Job();
  Attempt attempt = Attempt::FromClaim(job, Claim(1, 0), "n1");
  EndOfStep end;
  end.end = EndClass::kInDoubt;
  const auto after = attempt.StepEnded(0, end, kNow, [] { return kJitter; });
  ASSERT_TRUE(after.finish.has_value());
  EXPECT_EQ(after.finish->end_class, EndClass::kInDoubt);
  EXPECT_EQ(after.finish->decision.state, RunState::kUnknown);
  EXPECT_EQ(after.finish->decision.reason, "an effect is in doubt");
}

TEST(AttemptLifecycle, ResumesAtTheFirstStepNotSucceededAndSkipsLaterSucceededOnes) {
  const config::JobConfig job = Job();
  store::ClaimedRun claim = Claim(2, 1);
  claim.steps[2].state = StepStatus::kSucceeded;  // notify already done (a resolve redid load)
  Attempt attempt = Attempt::FromClaim(job, claim, "n1");
  EXPECT_EQ(attempt.Current(), 1u);
  EXPECT_EQ(attempt.Running(), 1u);
  EXPECT_EQ(attempt.Status(0), StepStatus::kSucceeded);
  const auto after = attempt.StepEnded(1, EndOfStep{}, kNow, [] { return kJitter; });
  EXPECT_EQ(after.next, std::nullopt) << "notify has succeeded already";
  EXPECT_EQ(attempt.Current(), std::nullopt);
  EXPECT_EQ(attempt.Find("notify"), 2u);
  EXPECT_EQ(attempt.Find("nope"), std::nullopt);
}

TEST(AttemptLifecycle, StepsTheLedgerHasNoRowForArePending) {
  const config::JobConfig job = Job();
  store::ClaimedRun claim = Claim(1, 0);
  claim.steps.pop_back();  // notify added to the job since the run's rows
  Attempt attempt = Attempt::FromClaim(job, claim, "n1");
  EXPECT_EQ(attempt.Status(2), StepStatus::kPending);
  EXPECT_EQ(attempt.Running(), 0u);
}

TEST(AttemptLifecycle, FillsTheRunContextAndTheStepWrites) {
  const config::JobConfig job = Job();
  Attempt attempt = Attempt::FromClaim(job, Claim(1, 0), "n1", "/logs/7.log");
  const RunContext ctx = attempt.Context(1);
  EXPECT_EQ(ctx.job, "billing");
  EXPECT_EQ(ctx.partition, "kr");
  EXPECT_EQ(ctx.business_date, "2026-11-05");
  EXPECT_EQ(ctx.period, "2026-11-05");
  EXPECT_EQ(ctx.run_key, "billing/kr/2026-11-05");
  EXPECT_EQ(ctx.scheduled_at, std::chrono::floor<seconds>(kBudgetStart));
  EXPECT_EQ(ctx.run_id, 7);
  EXPECT_EQ(ctx.attempt, 1);
  EXPECT_EQ(ctx.fencing_token, 41);
  EXPECT_EQ(ctx.step, "load");
  EXPECT_EQ(attempt.Context(std::nullopt).step, "");

  const store::StepParams start = attempt.StepWrite(1, StepStatus::kRunning, kNow);
  EXPECT_EQ(start.run_id, 7);
  EXPECT_EQ(start.token, 41);
  EXPECT_EQ(start.step, "load");
  EXPECT_EQ(start.state, StepStatus::kRunning);
  EXPECT_EQ(start.now, kNow);
  EXPECT_EQ(start.node, "n1");
  EXPECT_EQ(attempt.Status(1), StepStatus::kRunning);

  exec::StepOutcome o = Exited(1);
  o.output_tail = "boom\n";
  const auto after = attempt.StepEnded(1, EndOfStep::Of(o, job), kNow, [] { return kJitter; });
  ASSERT_TRUE(after.finish.has_value());
  EXPECT_EQ(after.finish->log_path, "/logs/7.log");
  EXPECT_EQ(after.finish->output_tail, "boom\n");
  EXPECT_EQ(after.finish->actor, "worker");
  EXPECT_EQ(attempt.Status(1), StepStatus::kFailed);
}

TEST(AttemptLifecycle, LeaseExpiredOfAJobThatLeftTheConfigUsesTheDefaultPolicy) {
  store::ExpiredLease lease;
  lease.run.id = 7;
  lease.token = 41;
  lease.budget_attempts = 1;
  lease.budget_started_at = kBudgetStart;
  lease.running_step = "gone";
  EXPECT_EQ(Attempt::LeaseExpired(nullptr, lease, kNow, kJitter).decision.state,
            RunState::kUnknown);
  lease.running_step = "";
  const auto between = Attempt::LeaseExpired(nullptr, lease, kNow, kJitter);
  EXPECT_EQ(between.decision.state, RunState::kPending);
  // The default policy: 30 s, jitter 0.2.
  EXPECT_EQ(*between.decision.next_attempt_at - kNow, seconds{27});
}

TEST(StepStatusNames, RoundTrip) {
  for (StepStatus s :
       {StepStatus::kPending, StepStatus::kRunning, StepStatus::kSucceeded, StepStatus::kFailed}) {
    EXPECT_EQ(ledger::ParseStepStatus(ledger::Name(s)), s);
  }
  EXPECT_EQ(ledger::Name(StepStatus::kSucceeded), "succeeded");
  EXPECT_EQ(ledger::ParseStepStatus("done"), std::nullopt);
}

}  // namespace
}  // namespace cronledger::engine
