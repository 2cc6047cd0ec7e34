// Conformance: the node heartbeat table, roles and ledger retention.
#include <algorithm>
#include <array>
#include <latch>
#include <thread>
#include <vector>

#include "store/conformance.h"

namespace cronledger::testing {
namespace {

using ledger::RunState;

class StoreNodes : public StoreConformance {
 protected:
  store::NodeBeat Beat(const std::string& node, const std::string& now,
                       const std::string& started = "2026-11-05T11:00:00Z") {
    return {node, "0.1.0", node + ":8377", InstantAt(started), InstantAt(now)};
  }

  void BeginEffect(const store::ClaimedRun& c, const std::string& key, const std::string& now) {
    store::EffectBeginParams b;
    b.run_id = c.run.id;
    b.token = c.token;
    b.key = key;
    b.now = InstantAt(now);
    b.node = "n1";
    auto r = S().EffectBegin(b);
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    store::EffectCommitParams cp;
    cp.run_id = c.run.id;
    cp.token = c.token;
    cp.key = key;
    cp.exit_status = 0;
    cp.result = "sent";
    cp.now = InstantAt(now);
    cp.node = "n1";
    ASSERT_TRUE(S().EffectCommit(cp).ok());
  }

  void SetCheckpoint(const store::ClaimedRun& c, ledger::CheckpointScope scope,
                     const std::string& value, const std::string& now) {
    store::CheckpointSetParams p;
    p.run_id = c.run.id;
    p.token = c.token;
    p.scope = scope;
    p.value = value;
    p.now = InstantAt(now);
    p.node = "n1";
    ASSERT_TRUE(S().CheckpointSet(p).ok());
  }

  store::PurgeResult Purge(const std::string& before, int limit = 500) {
    auto r = S().RunPurge({InstantAt(before), limit, std::nullopt});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() ? *r : store::PurgeResult{};
  }
};

TEST_P(StoreNodes, HeartbeatsRecordEachNodeOnceWithItsRunningLeases) {
  Setup({"a", "b", "c"});
  ASSERT_TRUE(S().NodeHeartbeat(Beat("n1", "2026-11-05T12:00:00Z")).ok());
  ASSERT_TRUE(S().NodeHeartbeat(Beat("n2", "2026-11-05T12:00:01Z")).ok());
  ASSERT_TRUE(S().NodeHeartbeat(Beat("n1", "2026-11-05T12:00:05Z")).ok());
  Claim("2026-11-05T12:00:06Z", 2, "n1");
  Claim("2026-11-05T12:00:06Z", 1, "n2");
  const auto nodes = *S().NodeList();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, "n1");
  EXPECT_EQ(nodes[0].last_seen_at, InstantAt("2026-11-05T12:00:05Z"));
  EXPECT_EQ(nodes[0].started_at, InstantAt("2026-11-05T11:00:00Z"));
  EXPECT_EQ(nodes[0].listen, "n1:8377");
  EXPECT_EQ(nodes[0].version, "0.1.0");
  EXPECT_EQ(nodes[0].running, 2);
  EXPECT_EQ(nodes[1].node, "n2");
  EXPECT_EQ(nodes[1].last_seen_at, InstantAt("2026-11-05T12:00:01Z"));
  EXPECT_EQ(nodes[1].running, 1);
  // A restart records its new start, and the process that beats.
  store::NodeBeat restart = Beat("n2", "2026-11-05T13:00:00Z", "2026-11-05T12:59:59Z");
  restart.host = "web-2.internal";
  restart.pid = 4242;
  ASSERT_TRUE(S().NodeHeartbeat(restart).ok());
  EXPECT_EQ(S().NodeList()->at(1).started_at, InstantAt("2026-11-05T12:59:59Z"));
  EXPECT_EQ(S().NodeList()->at(1).host, "web-2.internal");
  EXPECT_EQ(S().NodeList()->at(1).pid, 4242);
  EXPECT_EQ(S().NodeList()->at(0).host, "");
}

// A clean stop is the node's last beat, marked as such until it (or a
// process under its name) beats again; another process under its name
// since is not marked.
TEST_P(StoreNodes, AStopIsMarkedForTheProcessThatBeatOnly) {
  ASSERT_TRUE(S().NodeHeartbeat(Beat("n1", "2026-11-05T12:00:00Z")).ok());
  EXPECT_FALSE(S().NodeList()->at(0).stopped_at.has_value());
  ASSERT_TRUE(S().NodeStopped(Beat("n1", "2026-11-05T12:00:03Z")).ok());
  auto n = S().NodeList()->at(0);
  EXPECT_EQ(n.stopped_at, InstantAt("2026-11-05T12:00:03Z"));
  EXPECT_EQ(n.last_seen_at, InstantAt("2026-11-05T12:00:03Z"));
  // Started again: running, not stopped.
  ASSERT_TRUE(
      S().NodeHeartbeat(Beat("n1", "2026-11-05T12:01:00Z", "2026-11-05T12:00:59Z")).ok());
  EXPECT_FALSE(S().NodeList()->at(0).stopped_at.has_value());
  // The process started at 11:00 stops late: the one started at 12:00:59
  // still runs under the name, and is not marked.
  ASSERT_TRUE(S().NodeStopped(Beat("n1", "2026-11-05T12:01:02Z")).ok());
  n = S().NodeList()->at(0);
  EXPECT_FALSE(n.stopped_at.has_value());
  EXPECT_EQ(n.last_seen_at, InstantAt("2026-11-05T12:01:00Z"));
  EXPECT_EQ(n.started_at, InstantAt("2026-11-05T12:00:59Z"));
}

// Retention forgets nodes not seen since the instant it is given, and
// only when given one.
TEST_P(StoreNodes, PurgeForgetsNodesNotSeenSinceTheGivenInstant) {
  ASSERT_TRUE(S().NodeHeartbeat(Beat("old", "2026-11-04T11:59:59Z")).ok());
  ASSERT_TRUE(S().NodeHeartbeat(Beat("edge", "2026-11-04T12:00:00Z")).ok());
  ASSERT_TRUE(S().NodeHeartbeat(Beat("new", "2026-11-05T12:00:00Z")).ok());
  auto kept = S().RunPurge({InstantAt("2026-11-05T12:00:00Z"), 500, std::nullopt});
  ASSERT_TRUE(kept.ok()) << kept.status().ToString();
  EXPECT_EQ(kept->nodes, 0);
  EXPECT_EQ(S().NodeList()->size(), 3u);
  auto forgot = S().RunPurge(
      {InstantAt("2026-11-05T12:00:00Z"), 500, InstantAt("2026-11-04T12:00:00Z")});
  ASSERT_TRUE(forgot.ok()) << forgot.status().ToString();
  EXPECT_EQ(forgot->nodes, 1);
  const auto nodes = *S().NodeList();
  ASSERT_EQ(nodes.size(), 2u);
  EXPECT_EQ(nodes[0].node, "edge");
  EXPECT_EQ(nodes[1].node, "new");
}

TEST_P(StoreNodes, ARoleIsHeldByOneNodeUntilItsLeaseExpires) {
  const auto hold = [&](const std::string& node, const std::string& now) {
    auto r = S().RoleHold({"alerter", node, InstantAt(now), std::chrono::seconds{30}});
    EXPECT_TRUE(r.ok()) << r.status().ToString();
    return r.ok() && *r;
  };
  EXPECT_TRUE(hold("n1", "2026-11-05T12:00:00Z")) << "nobody held it";
  EXPECT_FALSE(hold("n2", "2026-11-05T12:00:10Z"));
  EXPECT_TRUE(hold("n1", "2026-11-05T12:00:20Z")) << "renewed: held until 12:00:50";
  EXPECT_FALSE(hold("n2", "2026-11-05T12:00:45Z"));
  EXPECT_FALSE(hold("n2", "2026-11-05T12:00:50Z")) << "held until 12:00:50 inclusive";
  EXPECT_TRUE(hold("n2", "2026-11-05T12:00:51Z")) << "n1 stopped renewing";
  EXPECT_FALSE(hold("n1", "2026-11-05T12:00:52Z")) << "n1 lost it";
  // Other roles are other leases.
  auto other = S().RoleHold({"other", "n1", InstantAt("2026-11-05T12:00:52Z")});
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(*other);
  EXPECT_FALSE(S().RoleHold({"", "n1", InstantAt("2026-11-05T12:00:52Z")}).ok());
  // Given up at a clean shutdown: the next to ask takes it at once. A node
  // that does not hold it gives nothing up.
  ASSERT_TRUE(S().RoleRelease("alerter", "n1").ok());
  EXPECT_FALSE(hold("n1", "2026-11-05T12:00:53Z")) << "n2 still holds it";
  ASSERT_TRUE(S().RoleRelease("alerter", "n2").ok());
  EXPECT_TRUE(hold("n1", "2026-11-05T12:00:54Z")) << "n2 gave it up";
}

// Two nodes asking at the same instant, on their own connections, round
// after round with the lease expired each time: exactly one gets it.
TEST_P(StoreNodes, TwoNodesAskingAtOnceNeverBothHoldARole) {
  auto second = backend_->Open();
  ASSERT_TRUE(second.ok()) << second.status().ToString();
  store::Store* stores[] = {&S(), second->get()};
  constexpr int kRounds = 50;
  std::array<std::array<int, 2>, kRounds> got{};
  for (int round = 0; round < kRounds; ++round) {
    const store::Instant now = InstantAt("2026-11-05T12:00:00Z") + std::chrono::minutes{round};
    std::latch start(2);
    std::vector<std::thread> nodes;
    for (int n = 0; n < 2; ++n) {
      nodes.emplace_back([&, n] {
        start.arrive_and_wait();
        auto r = stores[n]->RoleHold({"alerter", "n" + std::to_string(n), now,
                                      std::chrono::seconds{30}});
        got[round][n] = !r.ok() ? -1 : *r ? 1 : 0;
      });
    }
    for (auto& t : nodes) t.join();
    EXPECT_NE(got[round][0], -1) << "round " << round;
    EXPECT_NE(got[round][1], -1) << "round " << round;
    EXPECT_EQ(got[round][0] + got[round][1], 1) << "round " << round;
  }
}

TEST_P(StoreNodes, PurgeDeletesOldFinishedRunsWithWhatBelongsToThemAndNothingElse) {
  Setup({"a", "b", "c", "d", "e"});
  auto claimed = Claim("2026-11-05T12:00:00Z", 4);
  ASSERT_EQ(claimed.size(), 4u);
  BeginEffect(claimed[0], "mail-a", "2026-11-05T12:00:01Z");
  SetCheckpoint(claimed[0], ledger::CheckpointScope::kRun, "10", "2026-11-05T12:00:01Z");
  End(claimed[0], "2026-11-05T12:00:02Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  End(claimed[1], "2026-11-05T12:00:02Z", RunState::kFailed, ledger::EndClass::kPermanent);
  // The partition's watermark was written by this run: it stays.
  SetCheckpoint(claimed[2], ledger::CheckpointScope::kPartition, "7", "2026-11-05T12:00:01Z");
  End(claimed[2], "2026-11-05T12:00:02Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  // Unknown waits for an operator; running and pending are not finished.
  End(claimed[3], "2026-11-05T12:00:02Z", RunState::kUnknown, ledger::EndClass::kTimeout);
  const int64_t kept_running = Claim("2026-11-05T12:00:03Z", 1).at(0).run.id;
  const auto before = Runs("j");
  ASSERT_EQ(before.size(), 5u);

  // Nothing is older than the cutoff yet.
  EXPECT_EQ(Purge("2026-11-05T12:00:00Z").runs, 0);
  const auto purged = Purge("2027-12-10T00:00:00Z");
  EXPECT_EQ(purged.runs, 2);  // the succeeded a and the failed b
  EXPECT_EQ(purged.attempts, 2);
  EXPECT_EQ(purged.effects, 1);
  EXPECT_GT(purged.events, 0);

  std::vector<int64_t> left;
  for (const auto& r : Runs("j")) left.push_back(r.id);
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<int64_t>{claimed[2].run.id, claimed[3].run.id, kept_running}));
  EXPECT_EQ(S().RunGet(claimed[0].run.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(S().EffectGet("j", "mail-a").status().code(), StatusCode::kNotFound);
  store::EventQuery q;
  q.run_id = claimed[0].run.id;
  EXPECT_TRUE(S().EventList(q)->empty());
  EXPECT_TRUE(S().AttemptList(claimed[1].run.id)->empty());
  // The kept ones are intact.
  EXPECT_EQ(S().CheckpointGet(claimed[2].run.id)->partition->value, "7");
  EXPECT_EQ(S().AttemptList(claimed[3].run.id)->size(), 1u);
  EXPECT_EQ(S().RunGet(kept_running)->state, RunState::kRunning);
  // A second pass has nothing left to do.
  EXPECT_EQ(Purge("2027-12-10T00:00:00Z").runs, 0);
}

TEST_P(StoreNodes, PurgeWorksInBatchesOldestFirst) {
  Setup({"a", "b", "c", "d", "e"});
  auto claimed = Claim("2026-11-05T12:00:00Z", 5);
  ASSERT_EQ(claimed.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    End(claimed[i], "2026-11-05T12:00:0" + std::to_string(5 - i) + "Z", RunState::kSucceeded,
        ledger::EndClass::kSucceeded);
  }
  const auto first = Purge("2027-01-01T00:00:00Z", 2);
  EXPECT_EQ(first.runs, 2);
  // The two that ended first (the last claimed) went.
  EXPECT_EQ(S().RunGet(claimed[4].run.id).status().code(), StatusCode::kNotFound);
  EXPECT_EQ(S().RunGet(claimed[3].run.id).status().code(), StatusCode::kNotFound);
  EXPECT_TRUE(S().RunGet(claimed[0].run.id).ok());
  EXPECT_EQ(Purge("2027-01-01T00:00:00Z", 2).runs, 2);
  EXPECT_EQ(Purge("2027-01-01T00:00:00Z", 2).runs, 1);
  EXPECT_TRUE(Runs("j").empty());
}

TEST_P(StoreNodes, PurgeLeavesAnActionEventWhileARunItCoversRemains) {
  Setup({"a", "b"});
  auto claimed = Claim("2026-11-05T12:00:00Z", 2);
  ASSERT_EQ(claimed.size(), 2u);
  End(claimed[0], "2026-11-05T12:00:01Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  End(claimed[1], "2026-11-05T12:00:01Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  store::RequeueParams rq;
  rq.job = "j";
  for (const auto& c : claimed) {
    store::RequeueKey k;
    k.key.partition = c.run.partition;
    k.key.period = c.run.period;
    k.key.business_date = c.run.business_date;
    k.key.scheduled_at = c.run.scheduled_at;
    k.key.job_version = c.run.job_version;
    k.seen = RunState::kSucceeded;
    rq.keys.push_back(k);
  }
  rq.event_type = "rerun";
  rq.actor = "ops";
  rq.reason = "reload";
  rq.now = InstantAt("2026-11-05T12:00:02Z");
  auto requeued = S().RunRequeue(rq);
  ASSERT_TRUE(requeued.ok()) << requeued.status().ToString();
  // Only a finishes again; b stays pending, and so does the action's event.
  const auto again = Claim("2026-11-05T12:00:03Z", 1);
  ASSERT_EQ(again.size(), 1u);
  End(again[0], "2026-11-05T12:00:04Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  EXPECT_EQ(Purge("2027-01-01T00:00:00Z").runs, 1);
  ASSERT_EQ(Runs("j").size(), 1u);
  store::EventQuery q;
  q.type = "rerun";
  EXPECT_EQ(S().EventList(q)->size(), 1u);
  // Once b is finished and purged too, the action goes with it.
  const auto last = Claim("2026-11-05T12:00:05Z", 1);
  ASSERT_EQ(last.size(), 1u);
  End(last[0], "2026-11-05T12:00:06Z", RunState::kSucceeded, ledger::EndClass::kSucceeded);
  EXPECT_EQ(Purge("2027-01-01T00:00:00Z").runs, 1);
  EXPECT_TRUE(S().EventList(q)->empty());
}

// Dashboard sessions and login codes: found while not expired, a login
// code spent once (and not at all once expired), at most max_sessions
// sessions (the oldest end), and expired grants forgotten.
TEST_P(StoreNodes, DashboardGrantsExpireAreSpentOnceAndAreCapped) {
  using Kind = store::DashboardGrant::Kind;
  const auto grant = [&](const std::string& digest, Kind kind, const std::string& expires) {
    store::DashboardGrant g;
    g.digest = digest;
    g.kind = kind;
    g.token_name = "alice";
    g.token_digest = kind == Kind::kSession ? "d1" : "";
    g.csrf_token = kind == Kind::kSession ? "csrf-" + digest : "";
    g.created_at = InstantAt("2026-11-05T12:00:00Z");
    g.expires_at = InstantAt(expires);
    return g;
  };
  const auto now = InstantAt("2026-11-05T12:00:00Z");
  ASSERT_TRUE(S().GrantPut(grant("s1", Kind::kSession, "2026-11-06T00:00:00Z"), now, 2).ok());
  ASSERT_TRUE(S().GrantPut(grant("s2", Kind::kSession, "2026-11-06T00:01:00Z"), now, 2).ok());
  auto found = S().GrantGet("s1", now);
  ASSERT_TRUE(found.ok() && *found) << found.status().ToString();
  EXPECT_EQ((*found)->token_name, "alice");
  EXPECT_EQ((*found)->token_digest, "d1");
  EXPECT_EQ((*found)->csrf_token, "csrf-s1");
  EXPECT_EQ((*found)->kind, Kind::kSession);
  EXPECT_EQ((*found)->expires_at, InstantAt("2026-11-06T00:00:00Z"));
  EXPECT_FALSE(*S().GrantGet("s1", InstantAt("2026-11-06T00:00:00Z")));  // expired
  // A third session ends the oldest.
  ASSERT_TRUE(S().GrantPut(grant("s3", Kind::kSession, "2026-11-06T00:02:00Z"), now, 2).ok());
  EXPECT_FALSE(*S().GrantGet("s1", now));
  EXPECT_TRUE(*S().GrantGet("s2", now));
  EXPECT_TRUE(*S().GrantGet("s3", now));
  // Codes do not count against sessions, and are spent once.
  ASSERT_TRUE(S().GrantPut(grant("c1", Kind::kLoginCode, "2026-11-05T12:10:00Z"), now, 2).ok());
  ASSERT_TRUE(S().GrantPut(grant("c2", Kind::kLoginCode, "2026-11-05T12:10:00Z"), now, 2).ok());
  EXPECT_TRUE(*S().GrantGet("s2", now));
  EXPECT_FALSE(*S().GrantTake("s2", now));  // a session is not a code
  EXPECT_TRUE(*S().GrantGet("s2", now));
  auto taken = S().GrantTake("c1", now);
  ASSERT_TRUE(taken.ok() && *taken);
  EXPECT_EQ((*taken)->kind, Kind::kLoginCode);
  EXPECT_FALSE(*S().GrantTake("c1", now));
  EXPECT_FALSE(*S().GrantTake("c2", InstantAt("2026-11-05T12:10:00Z")));  // expired: spent
  EXPECT_FALSE(*S().GrantTake("c2", now));
  // Logout; and expired grants go at the next put.
  ASSERT_TRUE(S().GrantDelete("s3").ok());
  EXPECT_FALSE(*S().GrantGet("s3", now));
  ASSERT_TRUE(S().GrantPut(grant("s4", Kind::kSession, "2026-11-07T00:00:00Z"),
                           InstantAt("2026-11-06T12:00:00Z"), 2)
                  .ok());
  EXPECT_FALSE(*S().GrantGet("s2", now));
}

INSTANTIATE_TEST_SUITE_P(Backends, StoreNodes, ::testing::ValuesIn(AllStoreFactories()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace cronledger::testing
