// Store conformance: queuing expected keys (backfill, awaiting approval) and
// approving them (docs/gaps.md).
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
  rel.policy.catchup = config::Catchup::kLatest;
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

TEST_P(StoreRecovery, AnUnknownJobIsNotFoundAndNothingIsWritten) {
  auto r = Queue({Key("a", "2026-11-03")});
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(Runs("j").empty());
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreRecovery, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
