// Store conformance: claims, leases and fencing, attempts, steps, retries.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::EndClass;
using ledger::RunState;
using ledger::StepStatus;
using std::chrono::milliseconds;
using std::chrono::seconds;

class StoreExec : public StoreConformance {
 protected:
  store::ClaimRule Rule(const std::string& job = "j") {
    store::ClaimRule rule;
    rule.job = job;
    rule.lease_ttl = std::chrono::minutes{5};
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"generate", "deliver"};
    return rule;
  }

  std::vector<store::ClaimedRun> Claim(const std::string& now, int limit,
                                       std::vector<store::ClaimRule> rules = {},
                                       const std::string& node = "n1") {
    store::ClaimParams p;
    p.now = InstantAt(now);
    p.node = node;
    p.limit = limit;
    p.rules = rules.empty() ? std::vector<store::ClaimRule>{Rule()} : rules;
    auto r = S().RunClaim(p);
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : std::vector<store::ClaimedRun>{};
  }

  store::FinishParams Finish(const store::ClaimedRun& c, const std::string& now, RunState state,
                             EndClass end = EndClass::kSucceeded) {
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.now = InstantAt(now);
    f.node = "n1";
    f.end_class = end;
    f.exit_status = end == EndClass::kSucceeded ? 0 : 1;
    f.decision.state = state;
    return f;
  }

  Status FinishOne(const store::FinishParams& f) {
    auto r = S().RunFinishAttempts({f});
    if (!r.ok()) return r.status();
    return r->at(0);
  }

  RunState StateOf(int64_t id) { return S().RunGet(id)->state; }
};

TEST_P(StoreExec, ClaimsDueRunsWithIncreasingTokensAndOneLeaseEach) {
  Setup({"a", "b", "c"});
  const auto first = Claim("2026-11-05T12:00:01Z", 2);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_LT(first[0].token, first[1].token);
  for (const auto& c : first) {
    EXPECT_EQ(c.attempt, 1);
    EXPECT_EQ(c.run.state, RunState::kRunning);
    EXPECT_EQ(c.lease_expires_at, InstantAt("2026-11-05T12:05:01Z"));
    // The claim starts the first step: the claimant begins at once.
    EXPECT_EQ(c.steps, (std::vector<store::StepState>{{"generate", StepStatus::kRunning},
                                                      {"deliver", StepStatus::kPending}}));
    EXPECT_EQ(*S().StepList(c.run.id), c.steps);
    EXPECT_EQ(StateOf(c.run.id), RunState::kRunning);
  }
  const auto second = Claim("2026-11-05T12:00:02Z", 5);
  ASSERT_EQ(second.size(), 1u);
  EXPECT_GT(second[0].token, first[1].token);
  EXPECT_TRUE(Claim("2026-11-05T12:00:03Z", 5).empty()) << "a running run is not claimable";
  const auto claimed = Events("j", "claimed");
  ASSERT_EQ(claimed.size(), 3u);
  EXPECT_EQ(claimed[0].actor, "n1");
  auto attempts = S().AttemptList(first[0].run.id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 1u);
  EXPECT_EQ((*attempts)[0].token, first[0].token);
  EXPECT_EQ((*attempts)[0].node, "n1");
  EXPECT_FALSE((*attempts)[0].ended_at.has_value());
}

// The details of an attempt's events are JSON objects whatever the names
// in them hold (a node id and step names are the operator's text).
TEST_P(StoreExec, AnAttemptsEventDetailsAreJsonWhateverTheNames) {
  Setup({"a"});
  auto rule = Rule();
  rule.steps = {"gen \"a\"", "de\\liver"};
  const std::string node = "node \"7\" \\ x\ty";
  const auto c = Claim("2026-11-05T12:00:00Z", 1, {rule}, node).at(0);
  const auto at = InstantAt("2026-11-05T12:00:05Z");
  std::vector<store::WorkerWrite> batch(2);
  batch[0].step =
      store::StepParams{c.run.id, c.token, rule.steps[0], StepStatus::kSucceeded, at, node};
  batch[1].step =
      store::StepParams{c.run.id, c.token, rule.steps[1], StepStatus::kFailed, at, node};
  batch[1].finish = Finish(c, "2026-11-05T12:00:05Z", RunState::kPending, EndClass::kRetryable);
  batch[1].finish->node = node;
  batch[1].finish->step = rule.steps[1];
  batch[1].finish->exit_status = 75;
  batch[1].finish->decision.next_attempt_at = InstantAt("2026-11-05T12:01:00Z") + milliseconds{500};
  auto r = S().RunApplyWrites(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_TRUE(r->at(0).ok() && r->at(1).ok());
  std::vector<nlohmann::json> details;
  bool claimed = false;  // the attempt's events, from its claim on
  for (const auto& e : Events("j")) {
    claimed = claimed || e.type == "claimed";
    if (e.run_id != c.run.id || !claimed) continue;
    details.push_back(nlohmann::json::parse(e.details, nullptr, false));
    EXPECT_FALSE(details.back().is_discarded()) << e.type << ": " << e.details;
  }
  const std::vector<nlohmann::json> expected = {
      {{"attempt", 1}, {"fencing_token", c.token}, {"lease_expires_at", "2026-11-05T12:05:00Z"},
       {"node", node}},
      {{"attempt", 1}, {"step", rule.steps[0]}},
      {{"attempt", 1}, {"step", rule.steps[0]}},
      {{"attempt", 1}, {"step", rule.steps[1]}},
      {{"attempt", 1}, {"end_class", "retryable"}, {"exit_status", 75},
       {"fencing_token", c.token}, {"next_attempt_at", "2026-11-05T12:01:00Z"},
       {"step", rule.steps[1]}}};
  EXPECT_EQ(details, expected);
}

TEST_P(StoreExec, OnlyReleasedDueRunsOfListedJobsAreClaimed) {
  Setup({"a"}, {"09:00", "13:00"});
  AddJob("other");
  Plan("other", {Occurrence("2026-11-05T09:00:00Z", {"x"})}, "2026-11-05T09:00:00Z",
       "2026-11-05T08:00:00Z");
  // "other" was never released; the 13:00 run is not due at 12:00.
  const auto claimed = Claim("2026-11-05T12:00:01Z", 10, {Rule("j"), Rule("other")});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].run.period, "T09:00");
  EXPECT_TRUE(Claim("2026-11-05T12:00:01Z", 10, {Rule("nope")}).empty());
}

// A run released before its job (or everything) was paused waits: pausing
// is "nothing of it is claimed", not only "nothing new is released".
TEST_P(StoreExec, NothingOfAPausedJobIsClaimedEvenWhenReleasedBefore) {
  Setup({"a"});
  const auto pause = [&](std::optional<std::string> job, bool paused, const std::string& now) {
    store::PauseParams p;
    p.job = std::move(job);
    p.paused = paused;
    p.actor = "op";
    p.reason = "maintenance";
    p.now = InstantAt(now);
    ASSERT_TRUE(S().JobSetPaused(p).ok());
  };
  pause("j", true, "2026-11-05T12:00:00Z");
  EXPECT_TRUE(Claim("2026-11-05T12:00:01Z", 5).empty());
  pause("j", false, "2026-11-05T12:00:02Z");
  pause(std::nullopt, true, "2026-11-05T12:00:03Z");
  EXPECT_TRUE(Claim("2026-11-05T12:00:04Z", 5).empty());
  pause(std::nullopt, false, "2026-11-05T12:00:05Z");
  EXPECT_EQ(Claim("2026-11-05T12:00:06Z", 5).size(), 1u);
}

TEST_P(StoreExec, FinishRecordsTheAttemptAndTheOutcome) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:01Z", 1).at(0);
  for (const char* step : {"generate", "deliver"}) {
    for (StepStatus state : {StepStatus::kRunning, StepStatus::kSucceeded}) {
      ASSERT_TRUE(S().StepUpdate({c.run.id, c.token, step, state,
                                  InstantAt("2026-11-05T12:00:02Z"), "n1"})
                      .ok());
    }
  }
  auto f = Finish(c, "2026-11-05T12:00:03Z", RunState::kSucceeded);
  f.log_path = "/logs/1.log";
  f.output_tail = "done\n";
  ASSERT_TRUE(FinishOne(f).ok());
  EXPECT_EQ(StateOf(c.run.id), RunState::kSucceeded);
  const auto attempts = *S().AttemptList(c.run.id);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_EQ(attempts[0].end_class, "succeeded");
  EXPECT_EQ(attempts[0].exit_status, 0);
  EXPECT_EQ(attempts[0].log_path, "/logs/1.log");
  EXPECT_EQ(attempts[0].output_tail, "done\n");
  EXPECT_EQ(attempts[0].ended_at, InstantAt("2026-11-05T12:00:03Z"));
  EXPECT_EQ(*S().StepList(c.run.id),
            (std::vector<store::StepState>{{"generate", StepStatus::kSucceeded},
                                           {"deliver", StepStatus::kSucceeded}}));
  EXPECT_EQ(Events("j", "succeeded").size(), 1u);
  EXPECT_EQ(Events("j", "step_succeeded").size(), 2u);
  store::StatsParams p{"j", "2026-11-05", InstantAt("2026-11-05T12:01:00Z"),
                       SecondsAt("2026-10-01T00:00:00Z")};
  auto stats = S().StatsGet(p);
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->by_state["succeeded"], 1);
  EXPECT_EQ(stats->last_success_business_date, "2026-11-05");
  EXPECT_EQ(stats->steps["deliver"]["succeeded"], 1);
  EXPECT_FALSE(stats->oldest_open_scheduled_at.has_value());
}

TEST_P(StoreExec, StaleTokenWritesChangeNothingAndAreRecorded) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:01Z", 1).at(0);
  const int64_t wrong = c.token + 1000;
  const Status hb = S().RunHeartbeat({c.run.id, wrong, InstantAt("2026-11-05T12:01:00Z"),
                                      std::chrono::minutes{5}, "n2"});
  EXPECT_EQ(hb.code(), StatusCode::kStaleLease);
  const Status step = S().StepUpdate({c.run.id, wrong, "generate", StepStatus::kSucceeded,
                                      InstantAt("2026-11-05T12:01:00Z"), "n2"});
  EXPECT_EQ(step.code(), StatusCode::kStaleLease);
  auto f = Finish(c, "2026-11-05T12:01:00Z", RunState::kSucceeded);
  f.token = wrong;
  EXPECT_EQ(FinishOne(f).code(), StatusCode::kStaleLease);
  EXPECT_EQ(StateOf(c.run.id), RunState::kRunning);
  EXPECT_EQ(S().StepList(c.run.id)->at(0).state, StepStatus::kRunning);  // as the claim left it
  EXPECT_FALSE(S().AttemptList(c.run.id)->at(0).ended_at.has_value());
  const auto rejected = Events("j", "stale_write_rejected");
  ASSERT_EQ(rejected.size(), 3u);
  // Each committed refusal is counted for the node's metric.
  EXPECT_EQ(S().StaleWritesRejected(), 3);
  EXPECT_NE(rejected[0].details.find("\"current_token\":" + std::to_string(c.token)),
            std::string::npos)
      << rejected[0].details;
  // The right token still works.
  EXPECT_TRUE(S().RunHeartbeat({c.run.id, c.token, InstantAt("2026-11-05T12:01:00Z"),
                                std::chrono::minutes{5}, "n1"})
                  .ok());
}

TEST_P(StoreExec, AClaimRecordsTheTokenThatMadeItOnItsAttemptAndLease) {
  Setup({"a", "b"});
  store::ClaimParams p;
  p.now = InstantAt("2026-11-05T12:00:01Z");
  p.node = "external:w1";
  p.claimant = "worker-token";
  p.limit = 1;
  p.rules = {Rule()};
  const auto external = S().RunClaim(p);
  ASSERT_TRUE(external.ok()) << external.status().ToString();
  ASSERT_EQ(external->size(), 1u);
  const auto own = Claim("2026-11-05T12:00:01Z", 1).at(0);  // a node's own executor
  const int64_t id = external->at(0).run.id;
  EXPECT_EQ(S().AttemptList(id)->at(0).claimant, "worker-token");
  EXPECT_EQ(S().RunGetLease(id)->claimant, "worker-token");
  EXPECT_EQ(S().AttemptList(own.run.id)->at(0).claimant, "");
  EXPECT_EQ(S().RunGetLease(own.run.id)->claimant, "");
}

TEST_P(StoreExec, ExpiredLeaseIsReapedAndTheLateWorkerIsFencedOff) {
  Setup({"a"});
  const auto first = Claim("2026-11-05T12:00:00Z", 1).at(0);
  ASSERT_TRUE(S().StepUpdate({first.run.id, first.token, "generate", StepStatus::kRunning,
                              InstantAt("2026-11-05T12:00:01Z"), "n1"})
                  .ok());
  EXPECT_TRUE(S().RunListExpiredLeases(InstantAt("2026-11-05T12:04:59Z"), 10)->empty());
  const auto expired = *S().RunListExpiredLeases(InstantAt("2026-11-05T12:06:00Z"), 10);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0].token, first.token);
  EXPECT_EQ(expired[0].node, "n1");
  EXPECT_EQ(expired[0].running_step, "generate");
  store::StatsParams sp{"j", "2026-11-05", InstantAt("2026-11-05T12:06:00Z"),
                        SecondsAt("2026-10-01T00:00:00Z")};
  EXPECT_EQ(S().StatsGet(sp)->expired_leases, 1);
  EXPECT_EQ(S().StatsGet(sp)->unknown_total, 0);
  // The reaper: an uncertain end of an idempotent step, retried.
  store::FinishParams reap = Finish(first, "2026-11-05T12:06:00Z", RunState::kPending,
                                    EndClass::kLeaseExpired);
  reap.actor = "reaper";
  reap.exit_status.reset();
  reap.only_if_lease_expired = true;
  ASSERT_TRUE(FinishOne(reap).ok());
  EXPECT_EQ(Events("j", "lease_expired").size(), 1u);
  EXPECT_EQ(S().StepList(first.run.id)->at(0).state, StepStatus::kPending);
  // Another node takes it over with a higher token.
  const auto second = Claim("2026-11-05T12:06:01Z", 1, {}, "n2").at(0);
  EXPECT_EQ(second.run.id, first.run.id);
  EXPECT_GT(second.token, first.token);
  EXPECT_EQ(second.attempt, 2);
  // The first worker wakes up late: every write is rejected.
  EXPECT_EQ(S().RunHeartbeat({first.run.id, first.token, InstantAt("2026-11-05T12:06:02Z"),
                              std::chrono::minutes{5}, "n1"})
                .code(),
            StatusCode::kStaleLease);
  EXPECT_EQ(FinishOne(Finish(first, "2026-11-05T12:06:02Z", RunState::kSucceeded)).code(),
            StatusCode::kStaleLease);
  EXPECT_EQ(StateOf(first.run.id), RunState::kRunning);
  const auto attempts = *S().AttemptList(first.run.id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].end_class, "lease_expired");
  EXPECT_FALSE(attempts[1].ended_at.has_value());
  ASSERT_TRUE(FinishOne(Finish(second, "2026-11-05T12:06:03Z", RunState::kSucceeded)).ok());
  EXPECT_EQ(StateOf(first.run.id), RunState::kSucceeded);
}

TEST_P(StoreExec, TheReaperLosesToAHeartbeatThatCameFirst) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:00Z", 1).at(0);
  ASSERT_EQ(S().RunListExpiredLeases(InstantAt("2026-11-05T12:06:00Z"), 10)->size(), 1u);
  ASSERT_TRUE(S().RunHeartbeat({c.run.id, c.token, InstantAt("2026-11-05T12:05:59Z"),
                                std::chrono::minutes{5}, "n1"})
                  .ok());
  store::FinishParams reap = Finish(c, "2026-11-05T12:06:00Z", RunState::kPending,
                                    EndClass::kLeaseExpired);
  reap.only_if_lease_expired = true;
  EXPECT_EQ(FinishOne(reap).code(), StatusCode::kConflict);
  EXPECT_EQ(StateOf(c.run.id), RunState::kRunning);
  EXPECT_TRUE(Events("j", "stale_write_rejected").empty());
}

TEST_P(StoreExec, RetryWaitsForItsBackoffAndKeepsTheBudget) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:00Z", 1).at(0);
  auto f = Finish(c, "2026-11-05T12:00:10Z", RunState::kPending, EndClass::kRetryable);
  f.decision.next_attempt_at = InstantAt("2026-11-05T12:00:40Z");
  f.decision.reason = "retryable: attempt 2 of 3";
  ASSERT_TRUE(FinishOne(f).ok());
  EXPECT_EQ(StateOf(c.run.id), RunState::kPending);
  EXPECT_TRUE(Claim("2026-11-05T12:00:39Z", 1).empty());
  const auto again = Claim("2026-11-05T12:00:40Z", 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt, 2);
  EXPECT_EQ(again[0].budget_attempts, 2);
  EXPECT_EQ(again[0].budget_started_at, InstantAt("2026-11-05T12:00:00Z"));
  const auto scheduled = Events("j", "retry_scheduled");
  ASSERT_EQ(scheduled.size(), 1u);
  EXPECT_EQ(scheduled[0].reason, "retryable: attempt 2 of 3");
  EXPECT_NE(scheduled[0].details.find("\"next_attempt_at\":\"2026-11-05T12:00:40Z\""),
            std::string::npos);
}

// A run claimed ahead and released at shutdown before it started: its
// attempt is recorded, and given back to the retry budget, whose clock
// starts again with the next attempt when it was the first.
TEST_P(StoreExec, AnAttemptOutsideTheBudgetIsGivenBack) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:00Z", 1).at(0);
  auto f = Finish(c, "2026-11-05T12:00:10Z", RunState::kPending, EndClass::kSignal);
  f.decision.next_attempt_at = InstantAt("2026-11-05T12:00:10Z");
  f.outside_budget = true;
  ASSERT_TRUE(FinishOne(f).ok());
  const auto again = Claim("2026-11-05T12:01:00Z", 1);
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].attempt, 2);
  EXPECT_EQ(again[0].budget_attempts, 1);
  EXPECT_EQ(again[0].budget_started_at, InstantAt("2026-11-05T12:01:00Z"));
  const auto attempts = *S().AttemptList(c.run.id);
  ASSERT_EQ(attempts.size(), 2u);
  EXPECT_EQ(attempts[0].end_class, "signal");
  // A later one given back leaves the budget's start where it was.
  auto g = Finish(again[0], "2026-11-05T12:01:10Z", RunState::kPending, EndClass::kRetryable);
  g.decision.next_attempt_at = InstantAt("2026-11-05T12:01:10Z");
  ASSERT_TRUE(FinishOne(g).ok());
  const auto third = Claim("2026-11-05T12:02:00Z", 1).at(0);
  EXPECT_EQ(third.budget_attempts, 2);
  auto h = Finish(third, "2026-11-05T12:02:10Z", RunState::kPending, EndClass::kSignal);
  h.decision.next_attempt_at = InstantAt("2026-11-05T12:02:10Z");
  h.outside_budget = true;
  ASSERT_TRUE(FinishOne(h).ok());
  const auto fourth = Claim("2026-11-05T12:03:00Z", 1).at(0);
  EXPECT_EQ(fourth.attempt, 4);
  EXPECT_EQ(fourth.budget_attempts, 2);
  EXPECT_EQ(fourth.budget_started_at, InstantAt("2026-11-05T12:01:00Z"));
}

TEST_P(StoreExec, TheLeaseOfARunningRunIsReadWithItsBudget) {
  Setup({"a"});
  const auto first = Claim("2026-11-05T12:00:00Z", 1).at(0);
  auto lease = S().RunGetLease(first.run.id);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  EXPECT_EQ(lease->token, first.token);
  EXPECT_EQ(lease->attempt, 1);
  EXPECT_EQ(lease->node, "n1");
  EXPECT_EQ(lease->running_step, "generate");
  EXPECT_EQ(lease->expires_at, InstantAt("2026-11-05T12:05:00Z"));
  EXPECT_EQ(lease->budget_attempts, 1);
  EXPECT_EQ(lease->budget_started_at, InstantAt("2026-11-05T12:00:00Z"));
  ASSERT_TRUE(S().RunHeartbeat({first.run.id, first.token, InstantAt("2026-11-05T12:02:00Z"),
                                std::chrono::minutes{5}, "n1"})
                  .ok());
  EXPECT_EQ(S().RunGetLease(first.run.id)->expires_at, InstantAt("2026-11-05T12:07:00Z"));
  // Between steps no step is running.
  ASSERT_TRUE(S().StepUpdate({first.run.id, first.token, "generate", StepStatus::kSucceeded,
                              InstantAt("2026-11-05T12:02:01Z"), "n1"})
                  .ok());
  EXPECT_EQ(S().RunGetLease(first.run.id)->running_step, "");
  auto f = Finish(first, "2026-11-05T12:02:02Z", RunState::kPending, EndClass::kRetryable);
  f.decision.next_attempt_at = InstantAt("2026-11-05T12:03:00Z");
  ASSERT_TRUE(FinishOne(f).ok());
  EXPECT_EQ(S().RunGetLease(first.run.id).status().code(), StatusCode::kFailedPrecondition);
  EXPECT_EQ(S().RunGetLease(first.run.id + 1000).status().code(), StatusCode::kNotFound);
  // The retry counts in the same budget.
  const auto second = Claim("2026-11-05T12:03:00Z", 1, {}, "n2").at(0);
  lease = S().RunGetLease(second.run.id);
  ASSERT_TRUE(lease.ok());
  EXPECT_EQ(lease->token, second.token);
  EXPECT_EQ(lease->attempt, 2);
  EXPECT_EQ(lease->node, "n2");
  EXPECT_EQ(lease->running_step, "deliver");
  EXPECT_EQ(lease->budget_attempts, 2);
  EXPECT_EQ(lease->budget_started_at, InstantAt("2026-11-05T12:00:00Z"));
}

TEST_P(StoreExec, StepsResumeAtTheFirstNotSucceeded) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:00Z", 1).at(0);
  ASSERT_TRUE(S().StepUpdate({c.run.id, c.token, "generate", StepStatus::kSucceeded,
                              InstantAt("2026-11-05T12:00:01Z"), "n1"})
                  .ok());
  ASSERT_TRUE(S().StepUpdate({c.run.id, c.token, "deliver", StepStatus::kFailed,
                              InstantAt("2026-11-05T12:00:02Z"), "n1"})
                  .ok());
  ASSERT_TRUE(FinishOne(Finish(c, "2026-11-05T12:00:03Z", RunState::kPending,
                               EndClass::kRetryable))
                  .ok());
  const auto again = Claim("2026-11-05T12:00:04Z", 1).at(0);
  EXPECT_EQ(again.steps, (std::vector<store::StepState>{{"generate", StepStatus::kSucceeded},
                                                        {"deliver", StepStatus::kRunning}}));
  // The resumed step's start is recorded for the new attempt.
  const auto started = Events("j", "step_started");
  ASSERT_EQ(started.size(), 2u);
  EXPECT_NE(started[1].details.find("\"step\":\"deliver\""), std::string::npos);
  EXPECT_NE(started[1].details.find("\"attempt\":2"), std::string::npos);
}

TEST_P(StoreExec, MaxConcurrencyPerJob) {
  Setup({"a", "b", "c"});
  auto rule = Rule();
  rule.max_concurrency = 2;
  EXPECT_EQ(Claim("2026-11-05T12:00:00Z", 10, {rule}).size(), 2u);
  EXPECT_TRUE(Claim("2026-11-05T12:00:01Z", 10, {rule}).empty());
}

TEST_P(StoreExec, OverlapQueueWaitsForTheEarlierPeriod) {
  Setup({"a"}, {"09:00", "10:00"});
  auto rule = Rule();
  rule.overlap = ledger::Overlap::kQueue;
  const auto first = Claim("2026-11-05T12:00:00Z", 10, {rule});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0].run.period, "T09:00");
  EXPECT_TRUE(Claim("2026-11-05T12:00:01Z", 10, {rule}).empty());
  // An end state does not block: failed is a gap of its own.
  ASSERT_TRUE(FinishOne(Finish(first[0], "2026-11-05T12:00:02Z", RunState::kFailed,
                               EndClass::kPermanent))
                  .ok());
  const auto second = Claim("2026-11-05T12:00:03Z", 10, {rule});
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].run.period, "T10:00");
}

// However many periods of a partition wait behind its earliest (overlap =
// queue), they do not hold back other due runs.
TEST_P(StoreExec, RunsWaitingBehindAnEarlierPeriodDoNotHoldBackOthers) {
  std::vector<std::string> times;
  for (int m = 0; m < 40; ++m) times.push_back(fmt::format("09:{:02}", m));
  Setup({"a"}, times);
  Setup({"b"}, {"10:00"}, "k");
  auto queue = Rule();
  queue.overlap = ledger::Overlap::kQueue;
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2, {queue, Rule("k")});
  ASSERT_EQ(claimed.size(), 2u);
  EXPECT_EQ(claimed[0].run.job, "j");
  EXPECT_EQ(claimed[0].run.period, "T09:00");
  EXPECT_EQ(claimed[1].run.job, "k");
  EXPECT_EQ(claimed[1].run.period, "T10:00");
  EXPECT_EQ(Events("j", "skipped").size(), 0u) << "queued runs wait; they are not skipped";
}

// A claim looks a little past its batch first; when runs it passes over
// (a job at its max_concurrency) fill that look, it looks further on.
TEST_P(StoreExec, AClaimLooksFurtherWhenTheRunsItReadArePassedOver) {
  std::vector<std::string> partitions;
  for (int i = 0; i < 20; ++i) partitions.push_back(fmt::format("p{:02}", i));
  Setup(partitions, {"09:00"});
  Setup({"b"}, {"10:00"}, "k");
  auto one_at_a_time = Rule();
  one_at_a_time.max_concurrency = 1;
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2, {one_at_a_time, Rule("k")});
  ASSERT_EQ(claimed.size(), 2u);
  EXPECT_EQ(claimed[0].run.job, "j");
  EXPECT_EQ(claimed[1].run.job, "k");
}

TEST_P(StoreExec, OverlapSkipAndAllow) {
  Setup({"a"}, {"09:00", "10:00"});
  auto skip = Rule();
  skip.overlap = ledger::Overlap::kSkip;
  const auto first = Claim("2026-11-05T12:00:00Z", 1, {skip});
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(Claim("2026-11-05T12:00:01Z", 10, {skip}).empty());
  auto runs = Runs("j");
  std::sort(runs.begin(), runs.end(), [](auto& a, auto& b) { return a.id < b.id; });
  EXPECT_EQ(runs[1].state, RunState::kSkipped);
  EXPECT_EQ(runs[1].reason, ledger::SkipReason::kOverlap);

  Setup({"b"}, {"09:00", "10:00"}, "k");
  EXPECT_EQ(Claim("2026-11-05T12:00:00Z", 10, {Rule("k")}).size(), 2u);  // allow
}

TEST_P(StoreExec, OperatorRetryOnlyFromFailedOrUnknown) {
  Setup({"a"});
  const auto c = Claim("2026-11-05T12:00:00Z", 1).at(0);
  const Status running = S().RunRetry({c.run.id, "alice", "try again", InstantAt("2026-11-05T12:00:01Z")});
  EXPECT_EQ(running.code(), StatusCode::kConflict);
  EXPECT_EQ(running.message(), "run 1 is running; only failed or unknown runs can be retried");
  ASSERT_TRUE(FinishOne(Finish(c, "2026-11-05T12:00:02Z", RunState::kFailed,
                               EndClass::kPermanent))
                  .ok());
  ASSERT_TRUE(S().RunRetry({c.run.id, "alice", "fixed the input", InstantAt("2026-11-05T13:00:00Z")})
                  .ok());
  EXPECT_EQ(StateOf(c.run.id), RunState::kPending);
  const auto again = Claim("2026-11-05T13:00:01Z", 1).at(0);
  EXPECT_EQ(again.attempt, 2);
  EXPECT_EQ(again.budget_attempts, 1) << "an operator retry starts a fresh budget";
  const auto retry = Events("j", "retry");
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0].actor, "alice");
  EXPECT_EQ(retry[0].reason, "fixed the input");
  EXPECT_EQ(S().RunRetry({999, "a", "r", InstantAt("2026-11-05T13:00:00Z")}).code(),
            StatusCode::kNotFound);
}

TEST_P(StoreExec, BatchFinishIsFencedRowByRow) {
  Setup({"a", "b", "c"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  std::vector<store::FinishParams> batch;
  for (const auto& c : claimed) batch.push_back(Finish(c, "2026-11-05T12:00:05Z", RunState::kSucceeded));
  batch[1].token += 1000;
  auto r = S().RunFinishAttempts(batch);
  ASSERT_TRUE(r.ok());
  ASSERT_EQ(r->size(), 3u);
  EXPECT_TRUE((*r)[0].ok());
  EXPECT_EQ((*r)[1].code(), StatusCode::kStaleLease);
  EXPECT_TRUE((*r)[2].ok());
  EXPECT_EQ(StateOf(claimed[0].run.id), RunState::kSucceeded);
  EXPECT_EQ(StateOf(claimed[1].run.id), RunState::kRunning);
  EXPECT_EQ(StateOf(claimed[2].run.id), RunState::kSucceeded);
}

// Group commit: every write of the batch is fenced by its own token and
// answered in its own slot; a refused one changes nothing of its own and
// does not stop the others.
TEST_P(StoreExec, AppliedWritesAreFencedOneByOne) {
  Setup({"a", "b", "c", "d"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 4);
  ASSERT_EQ(claimed.size(), 4u);
  const auto at = InstantAt("2026-11-05T12:00:05Z");
  std::vector<store::WorkerWrite> batch(4);
  // a: the first step's result only.
  batch[0].step = store::StepParams{
      claimed[0].run.id, claimed[0].token, "generate", StepStatus::kSucceeded, at, "n1"};
  // b: a stale step result and a finish behind it: neither applies.
  batch[1].step = store::StepParams{
      claimed[1].run.id, claimed[1].token + 1000, "deliver", StepStatus::kSucceeded, at, "n1"};
  batch[1].finish = Finish(claimed[1], "2026-11-05T12:00:05Z", RunState::kSucceeded);
  // c: the last step's result and the attempt's end together.
  batch[2].step = store::StepParams{
      claimed[2].run.id, claimed[2].token, "deliver", StepStatus::kSucceeded, at, "n1"};
  batch[2].finish = Finish(claimed[2], "2026-11-05T12:00:05Z", RunState::kSucceeded);
  // d: a step the run does not have.
  batch[3].step = store::StepParams{
      claimed[3].run.id, claimed[3].token, "nope", StepStatus::kRunning, at, "n1"};
  batch[3].finish = Finish(claimed[3], "2026-11-05T12:00:05Z", RunState::kSucceeded);
  auto r = S().RunApplyWrites(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->size(), 4u);
  EXPECT_TRUE((*r)[0].ok()) << (*r)[0].ToString();
  EXPECT_EQ((*r)[1].code(), StatusCode::kStaleLease);
  EXPECT_TRUE((*r)[2].ok()) << (*r)[2].ToString();
  EXPECT_EQ((*r)[3].code(), StatusCode::kInvalidArgument);

  EXPECT_EQ(StateOf(claimed[0].run.id), RunState::kRunning);
  EXPECT_EQ(S().StepList(claimed[0].run.id)->at(0).state, StepStatus::kSucceeded);
  EXPECT_EQ(StateOf(claimed[1].run.id), RunState::kRunning);
  EXPECT_EQ(*S().StepList(claimed[1].run.id), claimed[1].steps);
  EXPECT_FALSE(S().AttemptList(claimed[1].run.id)->at(0).ended_at.has_value());
  EXPECT_EQ(StateOf(claimed[2].run.id), RunState::kSucceeded);
  EXPECT_TRUE(S().AttemptList(claimed[2].run.id)->at(0).ended_at.has_value());
  EXPECT_EQ(S().StepList(claimed[2].run.id)->at(1).state, StepStatus::kSucceeded);
  EXPECT_EQ(StateOf(claimed[3].run.id), RunState::kRunning);
  EXPECT_FALSE(S().AttemptList(claimed[3].run.id)->at(0).ended_at.has_value());

  const auto rejected = Events("j", "stale_write_rejected");
  ASSERT_EQ(rejected.size(), 1u);
  EXPECT_EQ(rejected[0].run_id, claimed[1].run.id);
  EXPECT_EQ(Events("j", "succeeded").size(), 1u);
}

// One claim that reaches both periods of a partition decides them in
// order: the second sees the first running (skip) or still open (queue).
TEST_P(StoreExec, OverlapIsDecidedRunByRunWithinOneClaim) {
  Setup({"a"}, {"09:00", "10:00"});
  auto skip = Rule();
  skip.overlap = ledger::Overlap::kSkip;
  const auto claimed = Claim("2026-11-05T12:00:00Z", 10, {skip});
  ASSERT_EQ(claimed.size(), 1u);
  EXPECT_EQ(claimed[0].run.period, "T09:00");
  const auto skipped = Events("j", "skipped");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_NE(skipped[0].run_id, claimed[0].run.id);
  EXPECT_EQ(StateOf(*skipped[0].run_id), RunState::kSkipped);
}

// Each run's events read in the order they happened, whatever else the
// claim or the group commit held.
TEST_P(StoreExec, ARunsEventsKeepTheirOrderAcrossABatch) {
  Setup({"a", "b", "c"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  const auto at = InstantAt("2026-11-05T12:00:05Z");
  std::vector<store::WorkerWrite> batch;
  for (const auto& c : claimed) {
    store::WorkerWrite w;
    w.step = store::StepParams{c.run.id, c.token, "generate", StepStatus::kSucceeded, at, "n1"};
    w.finish = Finish(c, "2026-11-05T12:00:05Z", RunState::kPending, EndClass::kTimeout);
    w.finish->decision.next_attempt_at = InstantAt("2026-11-05T12:01:00Z");
    batch.push_back(w);
  }
  auto r = S().RunApplyWrites(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  for (const auto& c : claimed) {
    std::vector<std::string> types;
    for (const auto& e : Events("j")) {
      if (e.run_id == c.run.id) types.push_back(e.type);
    }
    EXPECT_EQ(types, (std::vector<std::string>{"planned", "claimed", "step_started",
                                               "step_succeeded", "retry_scheduled"}))
        << c.run.RunKey();
    EXPECT_EQ(StateOf(c.run.id), RunState::kPending);
    EXPECT_EQ(S().StepList(c.run.id)->at(0).state, StepStatus::kSucceeded);
    EXPECT_EQ(S().AttemptList(c.run.id)->at(0).end_class, "timeout");
  }
}

// A step an ended attempt left running is not running any more; the steps
// of a run whose step result came with its end, and of a run whose end was
// refused, stay as they are.
TEST_P(StoreExec, AGroupCommitResetsOnlyTheStepsEndedAttemptsLeftRunning) {
  Setup({"a", "b", "c"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  const auto at = InstantAt("2026-11-05T12:00:05Z");
  std::vector<store::WorkerWrite> batch(3);
  // a: timed out in its first step, retried later.
  batch[0].finish = Finish(claimed[0], "2026-11-05T12:00:05Z", RunState::kPending,
                           EndClass::kTimeout);
  batch[0].finish->decision.next_attempt_at = InstantAt("2026-11-05T12:01:00Z");
  // b: its first step's result and its end together.
  batch[1].step = store::StepParams{
      claimed[1].run.id, claimed[1].token, "generate", StepStatus::kFailed, at, "n1"};
  batch[1].finish = Finish(claimed[1], "2026-11-05T12:00:05Z", RunState::kFailed,
                           EndClass::kPermanent);
  // c: an end with a stale token, refused.
  batch[2].finish = Finish(claimed[2], "2026-11-05T12:00:05Z", RunState::kPending,
                           EndClass::kTimeout);
  batch[2].finish->token += 1000;
  auto r = S().RunApplyWrites(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)[0].ok()) << (*r)[0].ToString();
  EXPECT_TRUE((*r)[1].ok()) << (*r)[1].ToString();
  EXPECT_EQ((*r)[2].code(), StatusCode::kStaleLease);
  EXPECT_EQ(S().StepList(claimed[0].run.id)->at(0).state, StepStatus::kPending);
  EXPECT_EQ(S().StepList(claimed[1].run.id)->at(0).state, StepStatus::kFailed);
  EXPECT_EQ(S().StepList(claimed[2].run.id)->at(0).state, StepStatus::kRunning);
  EXPECT_EQ(StateOf(claimed[2].run.id), RunState::kRunning);
}

// docs/effects.md: an attempt that began an effect and never
// settled it ends `unknown` even in a group commit with runs that succeed.
TEST_P(StoreExec, AGroupCommitMakesARunWithAnUnsettledEffectUnknown) {
  Setup({"a", "b"});
  const auto claimed = Claim("2026-11-05T12:00:00Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  auto begun = S().EffectBegin({claimed[0].run.id, claimed[0].token, "mail", "",
                                InstantAt("2026-11-05T12:00:01Z"), "n1", ""});
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  std::vector<store::WorkerWrite> batch(2);
  for (std::size_t i = 0; i < 2; ++i) {
    batch[i].finish = Finish(claimed[i], "2026-11-05T12:00:05Z", RunState::kSucceeded);
  }
  auto r = S().RunApplyWrites(batch);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_TRUE((*r)[0].ok());
  EXPECT_TRUE((*r)[1].ok());
  EXPECT_EQ(StateOf(claimed[0].run.id), RunState::kUnknown);
  EXPECT_EQ(S().AttemptList(claimed[0].run.id)->at(0).end_class, "in_doubt");
  EXPECT_EQ(StateOf(claimed[1].run.id), RunState::kSucceeded);
  const auto unknown = Events("j", "unknown");
  ASSERT_EQ(unknown.size(), 1u);
  EXPECT_EQ(unknown[0].reason, "effect \"mail\" is in doubt");
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreExec, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
