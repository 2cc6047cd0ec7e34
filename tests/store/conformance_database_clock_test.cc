// The store on the database's own clock, as production runs PostgreSQL
// (PostgresOptions::database_clock): every call is given a node's clock an
// hour behind the database's, which the store must ignore; each call's
// decisions and timestamps are one reading of the server's clock, taken in
// its own transaction (store.h, One instant per call). The rest of the
// conformance suite pins every instant, so it runs here only through these
// cases: its expectations are exact instants of 2026-11-05, long past by any
// real clock.
#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "common/wrong_wall_clock.h"
#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;

class StoreDatabaseClock : public StoreConformance {
 protected:
  void SetUp() override {
    StoreConformance::SetUp();
    if (HasFatalFailure()) return;
    before_ = DatabaseNow();
    // A node whose wall clock is an hour behind the database's and stands
    // still: every instant it passes is wrong.
    node_clock_.emplace(Clock::Duration::zero(),
                        Clock::TimePoint(before_.time_since_epoch() - std::chrono::hours(1)));
  }

  store::Instant DatabaseNow() {
    auto now = S().LedgerNow(InstantAt("2000-01-01T00:00:00Z"));
    EXPECT_TRUE(now.ok()) << now.status().ToString();
    return now.ok() ? *now : store::Instant{};
  }
  store::Instant NodeNow() { return store::ToInstant(node_clock_->Now()); }

  // Job "j" with `partitions` runs due a minute ago by the database's clock
  // (an hour from now by the node's), released.
  void PlanDue(int partitions) {
    ASSERT_TRUE(S().JobSync({"j", R"({"schedule":"* * * * *"})", NodeNow()}).ok());
    store::PlannedOccurrence occ;
    occ.scheduled_at = std::chrono::floor<std::chrono::seconds>(before_) - minutes{1};
    occ.local_time = "due";
    occ.job_version = 1;
    occ.tzdata = "2025b";
    for (int i = 0; i < partitions; ++i) {
      occ.runs.push_back({"p" + std::to_string(i), "d", "2026-12-01"});
    }
    store::PlanParams p;
    p.job = "j";
    p.occurrences = {occ};
    p.planned_through = occ.scheduled_at;
    p.now = NodeNow();
    ASSERT_TRUE(S().RunPlan(p).ok());
    store::ReleaseParams r;
    r.job = "j";
    r.policy.misfire_grace = std::chrono::hours{1};
    r.now = NodeNow();  // by this, nothing is due for another hour
    auto released = S().RunRelease(r);
    ASSERT_TRUE(released.ok()) << released.status().ToString();
    ASSERT_EQ(released->released, partitions);
  }

  std::vector<store::ClaimedRun> ClaimAll(int limit, milliseconds ttl = minutes{5},
                                          const std::string& node = "n1") {
    store::ClaimRule rule;
    rule.job = "j";
    rule.lease_ttl = ttl;
    rule.overlap = ledger::Overlap::kAllow;
    rule.steps = {"deliver"};
    auto claimed = S().RunClaim({NodeNow(), node, limit, {rule}});
    EXPECT_TRUE(claimed.ok()) << claimed.status().ToString();
    return claimed.ok() ? *claimed : std::vector<store::ClaimedRun>{};
  }

  // The end of `c`'s attempt as node n1 writes it, stamped with the node's
  // clock (which the database's replaces).
  store::FinishParams Finish(const store::ClaimedRun& c, ledger::EndClass end,
                             ledger::RunState state) {
    store::FinishParams f;
    f.run_id = c.run.id;
    f.token = c.token;
    f.now = NodeNow();
    f.node = "n1";
    f.end_class = end;
    f.decision.state = state;
    return f;
  }

  // Waits, in intervals, until the database's clock is past `t`.
  void WaitUntilPast(store::Instant t) {
    while (DatabaseNow() <= t && !HasFailure()) {
      node_clock_->SleepFor(milliseconds{50}, {});
    }
  }

  void ExpectWithin(store::Instant t, store::Instant from, store::Instant to,
                    const std::string& what) {
    EXPECT_GE(t, from) << what;
    EXPECT_LE(t, to) << what;
  }

  store::Instant before_;
  std::optional<WrongWallClock> node_clock_;
};

TEST_P(StoreDatabaseClock, AClaimIsOneInstantOfTheDatabasesClockWhateverTheNodeSays) {
  PlanDue(3);
  const auto claimed = ClaimAll(3);
  ASSERT_EQ(claimed.size(), 3u);
  const store::Instant after = DatabaseNow();
  // Every lease, attempt and event of the claim is at the same instant.
  const store::Instant at = claimed[0].lease_expires_at - minutes{5};
  ExpectWithin(at, before_, after, "the claim's instant");
  for (const auto& c : claimed) {
    EXPECT_EQ(c.lease_expires_at, at + minutes{5}) << c.run.RunKey();
    EXPECT_EQ(c.budget_started_at, at) << c.run.RunKey();
    auto attempts = S().AttemptList(c.run.id);
    ASSERT_TRUE(attempts.ok());
    ASSERT_EQ(attempts->size(), 1u);
    EXPECT_EQ(attempts->at(0).started_at, at) << c.run.RunKey();
  }
  const auto events = Events("j", "claimed");
  ASSERT_EQ(events.size(), 3u);
  for (const auto& e : events) EXPECT_EQ(e.at, at) << e.run_key;
}

TEST_P(StoreDatabaseClock, HeartbeatsStepsAndEndsAreOnTheDatabasesClock) {
  PlanDue(2);
  const auto claimed = ClaimAll(2);
  ASSERT_EQ(claimed.size(), 2u);
  const store::Instant claimed_at = claimed[0].lease_expires_at - minutes{5};
  ASSERT_TRUE(S().RunHeartbeat({claimed[0].run.id, claimed[0].token, NodeNow(), minutes{10},
                                "n1"})
                  .ok());
  auto lease = S().RunGetLease(claimed[0].run.id);
  ASSERT_TRUE(lease.ok()) << lease.status().ToString();
  ExpectWithin(lease->expires_at - minutes{10}, claimed_at, DatabaseNow(), "the heartbeat");

  // One group commit: each run's last step and its end, at one instant.
  std::vector<store::WorkerWrite> writes;
  for (const auto& c : claimed) {
    store::FinishParams f = Finish(c, ledger::EndClass::kSucceeded, ledger::RunState::kSucceeded);
    f.step = "deliver";
    writes.push_back({store::StepParams{c.run.id, c.token, "deliver",
                                        ledger::StepStatus::kSucceeded, NodeNow(), "n1"},
                      f});
  }
  auto results = S().RunApplyWrites(writes);
  ASSERT_TRUE(results.ok()) << results.status().ToString();
  for (const Status& r : *results) EXPECT_TRUE(r.ok()) << r.ToString();
  const store::Instant after = DatabaseNow();
  std::optional<store::Instant> ended;
  for (const auto& c : claimed) {
    auto run = S().RunGet(c.run.id);
    ASSERT_TRUE(run.ok());
    EXPECT_EQ(run->state, ledger::RunState::kSucceeded);
    auto attempts = S().AttemptList(c.run.id);
    ASSERT_TRUE(attempts.ok());
    ASSERT_EQ(attempts->size(), 1u);
    ASSERT_TRUE(attempts->at(0).ended_at.has_value());
    if (!ended) ended = attempts->at(0).ended_at;
    EXPECT_EQ(attempts->at(0).ended_at, ended) << "one instant for the whole commit";
    EXPECT_EQ(run->updated_at, *ended);
  }
  ExpectWithin(*ended, claimed_at, after, "the commit's instant");
  for (const auto& e : Events("j", "step_succeeded")) EXPECT_EQ(e.at, *ended);
  for (const auto& e : Events("j", "succeeded")) EXPECT_EQ(e.at, *ended);
}

TEST_P(StoreDatabaseClock, ALapsedLeaseIsJudgedOnTheDatabasesClock) {
  PlanDue(1);
  const auto claimed = ClaimAll(1, milliseconds{300});
  ASSERT_EQ(claimed.size(), 1u);
  WaitUntilPast(claimed[0].lease_expires_at);
  // By the node's clock the lease has an hour to run; by the database's it
  // has lapsed, and that is what counts.
  ASSERT_LT(NodeNow(), claimed[0].lease_expires_at);
  auto expired = S().RunListExpiredLeases(NodeNow(), 10);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  ASSERT_EQ(expired->size(), 1u);
  EXPECT_EQ(expired->at(0).run.id, claimed[0].run.id);
  // The reaper's finish applies only while the lease is expired: judged on
  // the same clock.
  store::FinishParams f =
      Finish(claimed[0], ledger::EndClass::kLeaseExpired, ledger::RunState::kUnknown);
  f.actor = "reaper";
  f.only_if_lease_expired = true;
  auto reaped = S().RunFinishAttempts({f});
  ASSERT_TRUE(reaped.ok()) << reaped.status().ToString();
  EXPECT_TRUE(reaped->at(0).ok()) << reaped->at(0).ToString();
  EXPECT_EQ(S().RunGet(claimed[0].run.id)->state, ledger::RunState::kUnknown);
}

TEST_P(StoreDatabaseClock, ALeaseIsNotLapsedBecauseANodesClockIsAhead) {
  PlanDue(1);
  ASSERT_EQ(ClaimAll(1).size(), 1u);
  auto expired = S().RunListExpiredLeases(DatabaseNow() + std::chrono::hours{24}, 10);
  ASSERT_TRUE(expired.ok()) << expired.status().ToString();
  EXPECT_TRUE(expired->empty());
  auto stats = S().StatsGet({"j", "2026-12-01", DatabaseNow() + std::chrono::hours{24},
                             std::chrono::sys_seconds{}});
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->expired_leases, 0);
  EXPECT_EQ(stats->in_flight, 1);
}

TEST_P(StoreDatabaseClock, ARoleLapsesOnTheDatabasesClock) {
  auto held = S().RoleHold({"alerter", "n1", NodeNow(), milliseconds{3000}});
  ASSERT_TRUE(held.ok()) << held.status().ToString();
  ASSERT_TRUE(*held);
  // A second node may not take it while it holds...
  EXPECT_FALSE(*S().RoleHold({"alerter", "n2", NodeNow() + std::chrono::hours{2}, minutes{1}}));
  WaitUntilPast(DatabaseNow() + milliseconds{3000});
  // ...and takes it once the lease lapsed, although its own clock says it
  // has an hour to run.
  EXPECT_TRUE(*S().RoleHold({"alerter", "n2", NodeNow(), minutes{1}}));
}

TEST_P(StoreDatabaseClock, EffectsAndCheckpointsAreOnTheDatabasesClock) {
  PlanDue(1);
  const auto claimed = ClaimAll(1);
  ASSERT_EQ(claimed.size(), 1u);
  const store::ClaimedRun& c = claimed[0];
  store::EffectBeginParams b;
  b.run_id = c.run.id;
  b.token = c.token;
  b.key = "mail-1";
  b.now = NodeNow();
  b.node = "n1";
  auto begun = S().EffectBegin(b);
  ASSERT_TRUE(begun.ok()) << begun.status().ToString();
  EXPECT_EQ(begun->outcome, store::EffectBeginOutcome::kProceed);
  const store::Instant begun_after = DatabaseNow();
  ExpectWithin(begun->effect.started_at, before_, begun_after, "the begin");
  store::EffectCommitParams commit;
  commit.run_id = c.run.id;
  commit.token = c.token;
  commit.key = "mail-1";
  commit.exit_status = 0;
  commit.checkpoint = store::CheckpointWrite{ledger::CheckpointScope::kRun, "42"};
  commit.now = NodeNow();
  commit.node = "n1";
  ASSERT_TRUE(S().EffectCommit(commit).ok());
  const store::Instant committed_after = DatabaseNow();
  auto effect = S().EffectGet("j", "mail-1");
  ASSERT_TRUE(effect.ok()) << effect.status().ToString();
  EXPECT_EQ(effect->state, ledger::EffectState::kCommitted);
  ExpectWithin(effect->updated_at, begun->effect.started_at, committed_after, "the commit");
  auto checkpoints = S().CheckpointGet(c.run.id);
  ASSERT_TRUE(checkpoints.ok());
  ASSERT_TRUE(checkpoints->run.has_value());
  // Written with the commit, in its transaction: the same instant.
  EXPECT_EQ(checkpoints->run->updated_at, effect->updated_at);
}

TEST_P(StoreDatabaseClock, OperatorActionsAreOnTheDatabasesClock) {
  PlanDue(2);
  const auto claimed = ClaimAll(2);
  ASSERT_EQ(claimed.size(), 2u);
  for (const auto& c : claimed) {
    auto r = S().RunFinishAttempts(
        {Finish(c, ledger::EndClass::kPermanent, ledger::RunState::kFailed)});
    ASSERT_TRUE(r.ok() && r->at(0).ok());
  }
  const store::Instant ended = DatabaseNow();
  ASSERT_TRUE(S().RunRetry({claimed[0].run.id, "ana", "fixed upstream", NodeNow()}).ok());
  ASSERT_TRUE(S().RunCancel({claimed[1].run.id, "ana", "not needed", NodeNow()}).ok());
  const store::Instant after = DatabaseNow();
  auto retried = S().RunGet(claimed[0].run.id);
  ASSERT_TRUE(retried.ok());
  EXPECT_EQ(retried->state, ledger::RunState::kPending);
  ExpectWithin(retried->updated_at, ended, after, "the retry");
  auto cancelled = S().RunGet(claimed[1].run.id);
  ASSERT_TRUE(cancelled.ok());
  EXPECT_EQ(cancelled->state, ledger::RunState::kCancelled);
  ExpectWithin(cancelled->updated_at, retried->updated_at, after, "the cancel");
  for (const char* type : {"retry", "cancel"}) {
    const auto events = Events("j", type);
    ASSERT_EQ(events.size(), 1u) << type;
    ExpectWithin(events[0].at, ended, after, type);
  }
  // The retried run is claimable again at once by the database's clock.
  EXPECT_EQ(ClaimAll(1).size(), 1u);
}

TEST_P(StoreDatabaseClock, ACallerMayPassNoInstantAtAll) {
  ASSERT_TRUE(S().JobSync({"j", R"({"schedule":"* * * * *"})", std::nullopt}).ok());
  ASSERT_TRUE(S().JobSetPaused({"j", true, "ana", "maintenance", std::nullopt}).ok());
  const auto paused = Events("j", "paused");
  ASSERT_EQ(paused.size(), 1u);
  ExpectWithin(paused[0].at, before_, DatabaseNow(), "the pause");
  auto due = S().RunListDue(std::nullopt, 10);
  ASSERT_TRUE(due.ok()) << due.status().ToString();
  EXPECT_TRUE(due->empty());
  auto outlook = S().RunReleaseOutlook(std::nullopt);
  ASSERT_TRUE(outlook.ok()) << outlook.status().ToString();
  EXPECT_TRUE(outlook->due_jobs.empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreDatabaseClock,
                         ::testing::ValuesIn(DatabaseClockFactories()),
                         [](const auto& info) { return info.param.name; });

// SQLite has no clock of its own: a write without an instant is refused,
// and nothing is written.
TEST(StoreWithoutClock, SqliteRefusesACallWithoutAnInstant) {
  auto backend = AllStoreFactories().at(0).make();
  ASSERT_EQ(backend->Name(), "sqlite");
  auto s = backend->Open();
  ASSERT_TRUE(s.ok()) << s.status().ToString();
  auto synced = (*s)->JobSync({"j", R"({"schedule":"* * * * *"})", std::nullopt});
  EXPECT_EQ(synced.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ((*s)->JobGet("j").status().code(), StatusCode::kNotFound);
  EXPECT_EQ((*s)->RunListDue(std::nullopt, 10).status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace cronledger::testing
