// Store conformance: queuing expected keys (backfill, awaiting approval) and
// approving them (docs/gaps.md).
#include <nlohmann/json.hpp>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::RunState;

class StoreRecovery : public StoreConformance {
 protected:
  static store::QueueKey Key(const std::string& partition, const std::string& date) {
    store::QueueKey k;
    k.partition = partition;
    k.period = date;
    k.business_date = date;
    k.scheduled_at = SecondsAt(date + "T09:00:00Z");
    k.job_version = 1;
    k.local_time = date + "T09:00:00Z";
    k.tzdata = "2025b";
    return k;
  }
  Result<store::QueueKeysResult> Queue(std::vector<store::QueueKey> keys,
                                       RunState as = RunState::kPending,
                                       bool include_waived = false) {
    store::QueueKeysParams p;
    p.job = "j";
    p.keys = std::move(keys);
    p.as = as;
    p.include_waived = include_waived;
    p.actor = "alice";
    p.reason = "outage on the 3rd";
    p.now = InstantAt("2026-11-06T10:00:00Z");
    return S().RunQueueKeys(p);
  }
  void Release(const std::string& now) {
    store::ReleaseParams r;
    r.job = "j";
    r.policy.misfire_grace = std::chrono::hours{24};
    r.now = InstantAt(now);
    ASSERT_TRUE(S().RunRelease(r).ok());
  }
  store::RunRecord RunOf(const std::string& partition, const std::string& date) {
    for (const auto& r : Runs("j")) {
      if (r.partition == partition && r.period == date) return r;
    }
    ADD_FAILURE() << "no run j/" << partition << "/" << date;
    return {};
  }
};

TEST_P(StoreRecovery, ANeverPlannedKeyGetsTheRunItWouldHaveHad) {
  AddJob("j");
  auto r = Queue({Key("a", "2026-11-03")});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->queued.size(), 1u);
  const auto run = RunOf("a", "2026-11-03");
  EXPECT_EQ(run.id, r->queued[0]);
  EXPECT_EQ(run.state, RunState::kPending);
  EXPECT_TRUE(run.released);
  EXPECT_TRUE(run.misfire_exempt);  // late by design: never misfired again
  EXPECT_EQ(run.business_date, "2026-11-03");
  EXPECT_EQ(run.scheduled_at, SecondsAt("2026-11-03T09:00:00Z"));
  const auto events = Events("j", "backfill");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].actor, "alice");
  EXPECT_EQ(events[0].reason, "outage on the 3rd");
  EXPECT_EQ(events[0].run_id, run.id);
  EXPECT_EQ(events[0].run_key, "j/a/2026-11-03");
  // Queuing it again finds it pending: left alone, no second event.
  r = Queue({Key("a", "2026-11-03")});
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->queued.empty());
  EXPECT_EQ(r->left_alone, std::vector<std::string>{"j/a/2026-11-03"});
  EXPECT_EQ(Events("j", "backfill").size(), 1u);
}

TEST_P(StoreRecovery, MisfiredKeysAreRequeuedAndWaivedOnesOnlyWhenAsked) {
  AddJob("j");
  Plan("j",
       {Occurrence("2026-11-05T09:00:00Z", {"a"}, "2026-11-05T09"),
        Occurrence("2026-11-05T10:00:00Z", {"a"}, "2026-11-05T10")},
       "2026-11-05T10:00:00Z", "2026-11-05T08:00:00Z");
  // Released hours late with catch-up "latest": 09:00 is coalesced (waived),
  // 10:00 misfired (a gap).
  store::ReleaseParams rel;
  rel.job = "j";
  rel.policy.misfire_grace = std::chrono::minutes{1};
  rel.policy.catchup = ledger::Catchup::kLatest;
  rel.now = InstantAt("2026-11-05T12:00:00Z");
  ASSERT_TRUE(S().RunRelease(rel).ok());
  ASSERT_EQ(RunOf("a", "2026-11-05T09").reason, ledger::SkipReason::kCoalesced);
  ASSERT_EQ(RunOf("a", "2026-11-05T10").reason, ledger::SkipReason::kMisfired);

  store::QueueKey nine = Key("a", "2026-11-05");
  nine.period = "2026-11-05T09";
  store::QueueKey ten = nine;
  ten.period = "2026-11-05T10";
  ten.scheduled_at = SecondsAt("2026-11-05T10:00:00Z");
  auto r = Queue({nine, ten});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->queued, std::vector<int64_t>{RunOf("a", "2026-11-05T10").id});
  EXPECT_EQ(r->left_alone, std::vector<std::string>{"j/a/2026-11-05T09"});
  const auto requeued = RunOf("a", "2026-11-05T10");
  EXPECT_EQ(requeued.state, RunState::kPending);
  EXPECT_FALSE(requeued.reason.has_value());
  EXPECT_TRUE(requeued.misfire_exempt);

  r = Queue({nine}, RunState::kPending, /*include_waived=*/true);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->queued.size(), 1u);
  EXPECT_EQ(RunOf("a", "2026-11-05T09").state, RunState::kPending);
}

TEST_P(StoreRecovery, AwaitingApprovalWaitsForAnOperator) {
  AddJob("j");
  auto r = Queue({Key("a", "2026-11-01"), Key("a", "2026-11-02"), Key("b", "2026-11-02")},
                 RunState::kAwaitingApproval);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->queued.size(), 3u);
  EXPECT_EQ(RunOf("a", "2026-11-01").state, RunState::kAwaitingApproval);
  EXPECT_FALSE(RunOf("a", "2026-11-01").released);

  store::ApproveParams p;
  p.job = "j";
  p.from = "2026-11-02";
  p.to = "2026-11-02";
  p.actor = "bob";
  p.reason = "data is back";
  p.now = InstantAt("2026-11-06T11:00:00Z");
  auto approved = S().RunApprove(p);
  ASSERT_TRUE(approved.ok()) << approved.status().ToString();
  EXPECT_EQ(approved->size(), 2u);
  EXPECT_EQ(RunOf("a", "2026-11-02").state, RunState::kPending);
  EXPECT_TRUE(RunOf("b", "2026-11-02").released);
  EXPECT_EQ(RunOf("a", "2026-11-01").state, RunState::kAwaitingApproval);
  EXPECT_EQ(Events("j", "approve").size(), 2u);

  p.from.reset();
  p.to.reset();
  p.run_id = RunOf("a", "2026-11-02").id;  // already approved
  EXPECT_EQ(S().RunApprove(p).status().code(), StatusCode::kConflict);
  p.run_id = 9999;
  EXPECT_EQ(S().RunApprove(p).status().code(), StatusCode::kNotFound);
  p.run_id = RunOf("a", "2026-11-01").id;
  approved = S().RunApprove(p);
  ASSERT_TRUE(approved.ok());
  EXPECT_EQ(*approved, std::vector<int64_t>{RunOf("a", "2026-11-01").id});
}

TEST_P(StoreRecovery, ARequeueIsOneActionThatTheNextAttemptsLinkTo) {
  AddJob("j");
  ASSERT_TRUE(Queue({Key("a", "2026-11-01"), Key("a", "2026-11-02"), Key("b", "2026-11-02")}).ok());
  const auto claimed = Claim("2026-11-06T10:00:00Z", 3);
  ASSERT_EQ(claimed.size(), 3u);
  End(claimed[0], "2026-11-06T10:00:05Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  End(claimed[1], "2026-11-06T10:00:05Z", RunState::kFailed, ledger::EndClass::kPermanent);
  // b/2026-11-02 stays running.
  const auto rk = [](store::QueueKey k, std::optional<RunState> seen) {
    return store::RequeueKey{std::move(k), seen};
  };
  store::RequeueParams p;
  p.job = "j";
  p.event_type = "rerun";
  p.actor = "bob";
  p.reason = "bad input fixed";
  p.from_first_step = false;
  p.details = R"({"only": "all"})";
  p.now = InstantAt("2026-11-06T11:00:00Z");

  // A key in flight is refused, and so is the whole action.
  p.keys = {rk(Key("c", "2026-11-03"), std::nullopt), rk(Key("b", "2026-11-02"), RunState::kRunning)};
  EXPECT_EQ(S().RunRequeue(p).status().code(), StatusCode::kConflict);
  // A key whose state is not what the preview saw: refused whole, naming it.
  p.keys = {rk(Key("c", "2026-11-03"), std::nullopt), rk(Key("a", "2026-11-02"), RunState::kUnknown)};
  auto r = S().RunRequeue(p);
  EXPECT_EQ(r.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(r.status().message().find("j/a/2026-11-02 is now failed, the preview saw unknown"),
            std::string::npos)
      << r.status().message();
  EXPECT_EQ(Runs("j").size(), 3u);  // c/2026-11-03 was not created
  EXPECT_TRUE(Events("j", "rerun").empty());
  p.keys = {};
  EXPECT_EQ(S().RunRequeue(p).status().code(), StatusCode::kInvalidArgument);

  p.keys = {rk(Key("a", "2026-11-01"), RunState::kSucceeded),
            rk(Key("a", "2026-11-02"), RunState::kFailed),
            rk(Key("c", "2026-11-03"), std::nullopt)};
  r = S().RunRequeue(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto succeeded = RunOf("a", "2026-11-01");
  const auto failed = RunOf("a", "2026-11-02");
  const auto missing = RunOf("c", "2026-11-03");
  EXPECT_EQ(r->queued, (std::vector<int64_t>{succeeded.id, failed.id, missing.id}));
  for (const auto& run : {succeeded, failed, missing}) {
    EXPECT_EQ(run.state, RunState::kPending) << run.RunKey();
    EXPECT_TRUE(run.released);
    EXPECT_TRUE(run.misfire_exempt);
  }
  // A succeeded run starts again at its first step; the failed one resumes.
  auto steps = S().StepList(succeeded.id);
  ASSERT_TRUE(steps.ok());
  ASSERT_EQ(steps->size(), 1u);
  EXPECT_EQ((*steps)[0].state, ledger::StepStatus::kPending);

  // One event with the list, in each run's history.
  const auto events = Events("j", "rerun");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].id, r->event_id);
  EXPECT_EQ(events[0].actor, "bob");
  EXPECT_EQ(events[0].reason, "bad input fixed");
  EXPECT_FALSE(events[0].run_id.has_value());
  const auto details = nlohmann::json::parse(events[0].details);
  EXPECT_EQ(details["only"], "all");
  EXPECT_EQ(details["run_keys"],
            nlohmann::json::parse(R"(["j/a/2026-11-01", "j/a/2026-11-02", "j/c/2026-11-03"])"));
  EXPECT_EQ(details["from"],
            nlohmann::json::parse(R"({"failed": 1, "never_planned": 1, "succeeded": 1})"));
  store::EventQuery q;
  q.run_id = failed.id;
  q.limit = 1000;
  auto history = S().EventList(q);
  ASSERT_TRUE(history.ok());
  ASSERT_FALSE(history->empty());
  EXPECT_EQ(history->back().id, r->event_id);

  // The attempts it causes link to it; the earlier one to the backfill
  // that queued the key first.
  const auto again = Claim("2026-11-06T11:00:01Z", 3);
  ASSERT_EQ(again.size(), 3u);
  auto attempts = S().AttemptList(failed.id);
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 2u);
  std::optional<int64_t> backfill;
  for (const auto& e : Events("j", "backfill")) {
    if (e.run_id == failed.id) backfill = e.id;
  }
  ASSERT_TRUE(backfill.has_value());
  EXPECT_EQ((*attempts)[0].action_event_id, backfill);
  EXPECT_EQ((*attempts)[1].action_event_id, r->event_id);
}

// A backfill queued before a scheduled occurrence falls due does not
// delay it: the claim takes every due run of the schedule's own first, then
// the backfilled ones, oldest key first. An approval and a rerun queue into
// the backfill lane too; an operator's retry does not.
TEST_P(StoreRecovery, BackfilledRunsAreClaimedAfterTheDueScheduledOnes) {
  AddJob("j");
  ASSERT_TRUE(Queue({Key("a", "2026-11-03"), Key("a", "2026-11-01"), Key("b", "2026-11-02")}).ok());
  ASSERT_TRUE(Queue({Key("c", "2026-11-04")}, RunState::kAwaitingApproval).ok());
  store::ApproveParams approve;
  approve.job = "j";
  approve.actor = "alice";
  approve.reason = "checked";
  approve.now = InstantAt("2026-11-06T10:00:00Z");
  auto approved = S().RunApprove(approve);
  ASSERT_TRUE(approved.ok()) << approved.status().ToString();
  Plan("j", {Occurrence("2026-11-06T10:30:00Z", {"a", "b"})}, "2026-11-06T10:30:00Z",
       "2026-11-06T10:29:00Z");
  // Nothing of the schedule's is due yet: the backfill takes the workers.
  const auto first = ClaimOne("2026-11-06T10:20:00Z");
  EXPECT_EQ(first.run.RunKey(), "j/a/2026-11-01");
  // 10:30 falls due: both of its runs come before the older backfilled keys.
  Release("2026-11-06T10:30:01Z");
  const auto claimed = Claim("2026-11-06T10:30:01Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  EXPECT_EQ(claimed[0].run.RunKey(), "j/a/2026-11-06");
  EXPECT_EQ(claimed[1].run.RunKey(), "j/b/2026-11-06");
  // A failed backfilled run retried by an operator goes first again.
  End(first, "2026-11-06T10:30:02Z", RunState::kFailed, ledger::EndClass::kPermanent);
  store::OperatorParams retry;
  retry.run_id = first.run.id;
  retry.actor = "alice";
  retry.reason = "fixed";
  retry.now = InstantAt("2026-11-06T10:31:00Z");
  ASSERT_TRUE(S().RunRetry(retry).ok());
  const auto rest = Claim("2026-11-06T10:31:01Z", 10);
  ASSERT_EQ(rest.size(), 4u);
  EXPECT_EQ(rest[0].run.RunKey(), "j/a/2026-11-01");
  EXPECT_EQ(rest[1].run.RunKey(), "j/b/2026-11-02");
  EXPECT_EQ(rest[2].run.RunKey(), "j/a/2026-11-03");
  EXPECT_EQ(rest[3].run.RunKey(), "j/c/2026-11-04");  // approved
}

// An operator's trigger of today's business date before its occurrence:
// the run keeps its scheduled time, is due at once, and the planner later
// finds its key in the ledger (the occurrence's other partitions planned).
TEST_P(StoreRecovery, ATriggerAheadOfItsOccurrenceIsDueAtOnce) {
  AddJob("j");
  store::RequeueParams p;
  p.job = "j";
  p.event_type = "trigger";
  p.actor = "alice";
  p.reason = "try it before 12:00";
  p.details = R"({"period": "2026-11-06"})";
  p.now = InstantAt("2026-11-06T10:00:00Z");
  store::QueueKey today = Key("a", "2026-11-06");
  today.scheduled_at = SecondsAt("2026-11-06T12:00:00Z");
  p.keys = {{today, std::nullopt}};
  // A backfilled key queued earlier waits behind it.
  ASSERT_TRUE(Queue({Key("a", "2026-11-01")}).ok());
  auto r = S().RunRequeue(p);
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  const auto claimed = ClaimOne("2026-11-06T10:00:01Z");
  EXPECT_EQ(claimed.run.RunKey(), "j/a/2026-11-06");
  EXPECT_EQ(claimed.run.scheduled_at, SecondsAt("2026-11-06T12:00:00Z"));
  End(claimed, "2026-11-06T10:00:05Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  const auto planned = Plan("j", {Occurrence("2026-11-06T12:00:00Z", {"a", "b"})},
                            "2026-11-06T12:00:00Z", "2026-11-06T11:59:00Z");
  EXPECT_EQ(planned.runs_planned, 1);
  EXPECT_EQ(planned.runs_deduplicated, 1);
  EXPECT_EQ(RunOf("a", "2026-11-06").state, RunState::kSucceeded);
  EXPECT_EQ(RunOf("b", "2026-11-06").state, RunState::kPending);
  // Not due before its occurrence: the backfilled key is claimed first.
  EXPECT_EQ(ClaimOne("2026-11-06T11:59:30Z").run.RunKey(), "j/a/2026-11-01");
  Release("2026-11-06T12:00:01Z");
  EXPECT_EQ(ClaimOne("2026-11-06T12:00:01Z").run.RunKey(), "j/b/2026-11-06");
}

TEST_P(StoreRecovery, AnUnknownJobIsNotFoundAndNothingIsWritten) {
  auto r = Queue({Key("a", "2026-11-03")});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Runs("j").empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreRecovery, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
